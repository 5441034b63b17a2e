import { createPool, type Pool } from 'mysql2/promise';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import type { MySqlPoolLike } from '../../lib/backends/mysql/mysql.options';
import { LockEngine } from '../../lib/core/lock-engine';
import { MariaDbServer } from '../support/mariadb-server';

/**
 * For the specs that put waiters of several "processes" on one key: one private MariaDB per file,
 * and engines that each have their own pool (so their own sessions and notify locks: to the server,
 * a separate process), all closed after the file. `wrap` may put a counting layer around a pool.
 */
export function mysqlWaiters(wrap: (pool: Pool) => MySqlPoolLike = (pool) => pool) {
  let server: MariaDbServer | undefined;
  let admin: Pool | undefined;
  const pools: Pool[] = [];
  const engines: LockEngine[] = [];
  const backends: MySqlLockBackend[] = [];

  beforeAll(async () => {
    server = await MariaDbServer.start();
    admin = createPool({ ...server.connection, connectionLimit: 2 });
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await admin?.end();
    await server?.destroy();
  });

  return {
    /** A new engine on its own pool of 4 with one blocking waiter; its backend is `backends.at(-1)`. */
    engine(): LockEngine {
      const pool = createPool({ ...server!.connection, connectionLimit: 4 });
      pools.push(pool);
      const backend = new MySqlLockBackend({ client: wrap(pool), blockingWaiters: 1 });
      backends.push(backend);
      const e = new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 60_000, wait: 60_000 } });
      engines.push(e);
      return e;
    },
    backends,
    /** Waiter tickets on `key` right now (rows in mode 'queued'). */
    async tickets(key: string): Promise<number> {
      const [rows] = await admin!.query(
        "SELECT COUNT(*) AS n FROM distributed_locks WHERE lock_key = ? AND mode = 'queued'",
        [key],
      );
      return Number((rows as { n: number }[])[0].n);
    },
  };
}
