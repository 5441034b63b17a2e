import { createPool, type Pool } from 'mysql2/promise';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { MariaDbServer } from '../support/mariadb-server';
import { describeLockConformance } from './lock-conformance';

let server: MariaDbServer;
let pools: Pool[] = [];

describeLockConformance({
  name: 'mysql (MariaDB 10.11)',
  setup: async () => {
    server = await MariaDbServer.start();
    const connect = () => {
      const pool = createPool({ ...server.connection, connectionLimit: 4, connectTimeout: 2_000 });
      pools.push(pool);
      return pool;
    };
    const admin = connect();
    return {
      createBackend: () => new MySqlLockBackend({ client: connect() }),
      forceDelete: async (fullKey) => {
        await admin.execute('DELETE FROM distributed_locks WHERE lock_key = ?', [fullKey]);
      },
      outage: { stop: () => server.kill(), start: () => server.start() },
      closeAll: async () => {
        await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
        pools = [];
      },
    };
  },
  teardown: async () => server?.destroy(),
});
