import { Pool } from 'pg';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { PostgresServer } from '../support/postgres-server';
import { describeLockConformance } from './lock-conformance';

let server: PostgresServer;
let pools: Pool[] = [];

describeLockConformance({
  name: 'postgres 15',
  setup: async () => {
    server = await PostgresServer.start();
    const connect = () => {
      const pool = new Pool({ ...server.connection, max: 4, connectionTimeoutMillis: 2_000 });
      pool.on('error', () => undefined); // idle clients die with the server during outages
      pools.push(pool);
      return pool;
    };
    const admin = connect();
    return {
      createBackend: () => new PostgresLockBackend({ client: connect() }),
      forceDelete: async (fullKey) => {
        await admin.query('DELETE FROM distributed_locks WHERE lock_key = $1', [fullKey]);
      },
      outage: { stop: () => server.crash(), start: () => server.start() },
      closeAll: async () => {
        await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
        pools = [];
      },
    };
  },
  teardown: async () => server?.destroy(),
});
