/**
 * One contender process of the SQL semaphore spec (started with test/support/holder-harness.ts).
 * Arguments: mysql|postgres, the connection options as JSON, key, permits, workers, rounds,
 * holdMs. Runs `workers` concurrent loops of `rounds` grants of a semaphore of `permits`; inside
 * each grant it reports { type: 'enter', token } and, before releasing, { type: 'exit' }, each
 * time waiting for the parent's ack: the parent sees an exit before the permit is released, so its
 * count of holders is never lower than the truth. Ends with `done`.
 */
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';
import { runHolder } from '../support/holder-harness';

const [kind, connection, key, permits, workers, rounds, holdMs] = process.argv.slice(2);

runHolder(async ({ send, onCommand }) => {
  const options = JSON.parse(connection) as Record<string, unknown>;
  let backend;
  if (kind === 'mysql') {
    backend = new MySqlLockBackend({ client: createPool({ ...options, connectionLimit: 4 }) });
  } else {
    const pool = new Pool({ ...options, max: 4 });
    pool.on('error', () => undefined);
    backend = new PostgresLockBackend({ client: pool });
  }
  const engine = new LockEngine({ backend, keyPrefix: 'semtest:', defaults: { ttl: 3_000 } });

  let next = 0;
  const acks = new Map<number, () => void>();
  onCommand((m) => {
    if (m.type === 'ack') acks.get(m.id as number)?.();
  });
  const ask = (message: { type: string; [field: string]: unknown }) => {
    const id = next++;
    return new Promise<void>((resolve) => {
      acks.set(id, () => (acks.delete(id), resolve()));
      send({ ...message, id });
    });
  };

  const worker = async () => {
    for (let i = 0; i < Number(rounds); i++) {
      await engine.withLock(
        key,
        async (handle) => {
          await ask({ type: 'enter', token: handle.fencingToken.toString() });
          await new Promise((r) => setTimeout(r, Number(holdMs)));
          await ask({ type: 'exit' });
        },
        { permits: Number(permits), wait: 120_000 },
      );
    }
  };
  await Promise.all(Array.from({ length: Number(workers) }, worker));
  await engine.close();
  send({ type: 'done' });
});
