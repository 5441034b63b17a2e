/**
 * One contender process of the SQL semaphore spec. argv: <mysql|postgres> <connection JSON> <key>
 * <permits> <workers> <rounds> <holdMs>. Runs `workers` concurrent loops of `rounds` grants of a
 * semaphore of `permits`; inside each grant it reports { type: 'enter', token } and, before
 * releasing, { type: 'exit' }, each time waiting for the parent's ack: the parent sees an exit
 * before the seat is released, so its count of holders is never lower than the truth.
 */
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';

const [kind, connection, key, permits, workers, rounds, holdMs] = process.argv.slice(2);
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
process.on('message', (m: { type: string; id: number }) => {
  if (m.type === 'ack') acks.get(m.id)?.();
});
function ask(message: Record<string, unknown>): Promise<void> {
  const id = next++;
  return new Promise((resolve) => {
    acks.set(id, () => (acks.delete(id), resolve()));
    process.send?.({ ...message, id });
  });
}

async function worker(): Promise<void> {
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
}

Promise.all(Array.from({ length: Number(workers) }, worker))
  .then(() => engine.close())
  .then(
    () => process.send?.({ type: 'done', id: -1 }, () => process.exit(0)),
    (error: unknown) => {
      process.stderr.write(`${String((error as Error)?.stack ?? error)}\n`);
      process.exit(1);
    },
  );
