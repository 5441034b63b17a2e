/**
 * One campaigner of the SQL failover spec. argv: <mysql|postgres> <connection JSON> <ttl ms>.
 * Reports over IPC { type: 'leader', token } on every win and { type: 'follower' } on every loss,
 * and answers { type: 'status' } with { type: 'status', leader } (read synchronously: a paused
 * leader that resumes past its validity answers false).
 */
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';

const [kind, connection, ttl] = process.argv.slice(2);
const options = JSON.parse(connection) as Record<string, unknown>;
let backend;
if (kind === 'mysql') {
  backend = new MySqlLockBackend({
    client: createPool({ ...options, connectionLimit: 4, connectTimeout: 2_000 }),
  });
} else {
  const pool = new Pool({ ...options, max: 4, connectionTimeoutMillis: 2_000 });
  pool.on('error', () => undefined); // idle clients die when the proxy drops them
  backend = new PostgresLockBackend({ client: pool });
}
const engine = new LockEngine({
  backend,
  keyPrefix: 'election-test:',
  defaults: { ttl: Number(ttl) },
});
const leadership = engine.leadership('fleet');
// `t`: when it happened, on the machine's clock (comparable across the campaigner processes).
const t = () => performance.timeOrigin + performance.now();
leadership.onChange((leader, term) =>
  process.send?.(
    leader
      ? { type: 'leader', token: String(term?.fencingToken), t: t() }
      : { type: 'follower', t: t() },
  ),
);
process.on('message', (m: { type: string }) => {
  if (m.type === 'status') process.send?.({ type: 'status', leader: leadership.isLeader });
});
process.on('disconnect', () => process.exit(0)); // the spec ended: nobody to report to
process.send?.({ type: 'ready' });
