/**
 * A separate holder process for the SQL fault tests (started with test/support/holder-harness.ts):
 * takes one lock and keeps it (the watchdog renews it) until it is SIGKILLed. Arguments:
 * mysql|postgres, the connection options as JSON, key, ttl ms. Reports `held` (fence) once it
 * holds the lock.
 */
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';
import { runHolder } from '../support/holder-harness';

runHolder(async ({ send }) => {
  const [kind, connection, key, ttl] = process.argv.slice(2);
  const options = JSON.parse(connection) as Record<string, unknown>;
  let backend;
  if (kind === 'mysql') {
    backend = new MySqlLockBackend({ client: createPool({ ...options, connectionLimit: 2 }) });
  } else {
    const pool = new Pool({ ...options, max: 2 });
    pool.on('error', () => undefined);
    backend = new PostgresLockBackend({ client: pool });
  }
  const engine = new LockEngine({ backend, keyPrefix: '' });
  const handle = await engine.acquire(key, { ttl: Number(ttl), wait: 10_000 });
  send({ type: 'held', fence: handle.fencingToken.toString() });
});
