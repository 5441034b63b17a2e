/**
 * A separate holder process for the SQL fault tests: takes one lock and keeps it (the watchdog
 * renews it) until it is SIGKILLed. Usage: node -r ts-node/register/transpile-only
 * sql-holder.process.ts <mysql|postgres> <connection JSON> <key> <ttl ms>. Prints one JSON line
 * {"fence":"<token>"} once it holds the lock.
 */
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';

async function main(): Promise<void> {
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
  process.stdout.write(`${JSON.stringify({ fence: handle.fencingToken.toString() })}\n`);
  setInterval(() => undefined, 1_000); // stay alive, holding the lock, until killed
}

main().catch((error: unknown) => {
  process.stderr.write(`${String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
