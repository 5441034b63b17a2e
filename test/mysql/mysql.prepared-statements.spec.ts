import { randomBytes } from 'node:crypto';
import { createPool, type Pool } from 'mysql2/promise';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { RENEW_SHAPES } from '../../lib/backends/mysql/mysql.schema';
import type { BackendLock } from '../../lib/interfaces/lock-backend.interface';
import { MariaDbServer } from '../support/mariadb-server';

/**
 * Issue 14.9, found by a security review: renewals prepared one statement text per batch size on
 * every pooled connection (300 server-side prepared statements after batches of 1..150), filling
 * the server-wide max_prepared_stmt_count that every application on the server shares; another
 * application then failed to prepare anything. Renewals now come in a few fixed shapes.
 */
describe('regression: MySQL renewals of every batch size 1..150 prepare a bounded set of statements', () => {
  let server: MariaDbServer;
  let pool: Pool;
  let admin: Pool;

  beforeAll(async () => {
    server = await MariaDbServer.start();
    pool = createPool({ ...server.connection, connectionLimit: 1 });
    admin = createPool({ ...server.connection, connectionLimit: 1 });
  });
  afterAll(async () => {
    await pool?.end();
    await admin?.end();
    await server?.destroy();
  });

  const prepared = async () => {
    const [rows] = await admin.query("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'");
    return Number((rows as { Value: string }[])[0].Value);
  };

  it('stays within 2 statements per shape (renew + the follow-up query) on the connection', async () => {
    const backend = new MySqlLockBackend({ client: pool, blockingWaiters: 0, sweepInterval: 0 });
    const signal = new AbortController().signal;
    const locks: BackendLock[] = [];
    for (let i = 0; i < 150; i++) {
      const lock = {
        key: `ps:${i}`,
        owner: randomBytes(16).toString('hex'),
        mode: 'exclusive' as const,
        ttl: 60_000,
      };
      const granted = await backend.tryAcquire({ ...lock, signal, onLost: () => undefined });
      expect(granted.acquired).toBe(true);
      locks.push(lock);
    }
    const before = await prepared();
    for (let n = 1; n <= 150; n++) {
      // The last lock of each batch is not ours: the follow-up "which are still ours" query runs too.
      const batch = [
        ...locks.slice(0, n - 1),
        { ...locks[n - 1], owner: randomBytes(16).toString('hex') },
      ];
      const answers = await backend.renew(batch);
      expect(answers).toEqual(batch.map((_, i) => i < n - 1));
    }
    const added = (await prepared()) - before;
    expect(added).toBeGreaterThan(0); // the count is real: renewals do prepare statements
    expect(added).toBeLessThanOrEqual(2 * RENEW_SHAPES.length);
    await Promise.all(locks.map((l) => backend.release(l)));
    await backend.close();
  });
});
