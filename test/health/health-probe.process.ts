/**
 * Prints the health answer (JSON, one line) of a MySQL or PostgreSQL backend whose server
 * refuses connections (argv: kind, port). A child process of its own: under Jest a driver's
 * error comes from another realm (`instanceof Error` is false there), which hides the text
 * a real application shows.
 */
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend, PostgresLockBackend } from '../../lib';
import { DistributedLockHealthIndicator } from '../../lib/operations';
import { LockEngine } from '../../lib/core/lock-engine';

async function main(kind: string, port: number): Promise<void> {
  let pool: { end(): Promise<void> };
  let backend: MySqlLockBackend | PostgresLockBackend;
  if (kind === 'mysql') {
    const p = createPool({ host: '127.0.0.1', port, user: 'nobody', connectTimeout: 1_000 });
    backend = new MySqlLockBackend({ client: p });
    pool = p;
  } else {
    const p = new Pool({ host: '127.0.0.1', port, user: 'nobody' });
    p.on('error', () => undefined);
    backend = new PostgresLockBackend({ client: p });
    pool = p;
  }
  const engine = new LockEngine({ backend, operationTimeout: 2_000 });
  const result = await new DistributedLockHealthIndicator(engine).isHealthy('locks');
  process.stdout.write(`${JSON.stringify(result)}\n`);
  await engine.close();
  await pool.end().catch(() => undefined);
}

void main(process.argv[2], Number(process.argv[3]));
