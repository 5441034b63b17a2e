import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import {
  PostgresLockBackend,
  type PgPoolLike,
  type PostgresLockBackendOptions,
} from '../../lib/backends/postgres';
import { advisoryClass, postgresStatements } from '../../lib/backends/postgres/postgres.schema';
import { LockEngine } from '../../lib/core/lock-engine';
import { describeSqlBackend, type LoggedStatement } from '../sql/sql-backend.cases';
import { PostgresServer } from '../support/postgres-server';

/** Counts what a backend sends, over a real pg Pool (nothing is faked; LISTEN uses the pool's own Client and options). */
function logged(pool: Pool, log: LoggedStatement[]): PgPoolLike {
  const real = pool as unknown as PgPoolLike;
  return {
    connect: async () => {
      const client = await pool.connect();
      return {
        query: (sql: string, values?: unknown[]) => (
          log.push({ sql, values }),
          client.query(sql, values)
        ),
        release: (destroy?: boolean | Error) => client.release(destroy),
        on: (event: 'error', listener: (error: Error) => void) => client.on(event, listener),
        removeListener: (event: 'error', listener: (error: Error) => void) =>
          client.removeListener(event, listener),
      };
    },
    Client: real.Client,
    options: real.options,
  };
}

describeSqlBackend('postgres 15', async () => {
  const server = await PostgresServer.start();
  let pools: Pool[] = [];
  const pool = (size = 4) => {
    const p = new Pool({ ...server.connection, max: size, connectionTimeoutMillis: 2_000 });
    p.on('error', () => undefined); // idle clients die with the server during outages
    pools.push(p);
    return p;
  };
  const admin = pool();
  const count = async (sql: string, values: unknown[] = []) =>
    Number((await admin.query(sql, values)).rows[0].n);
  return {
    kind: 'postgres',
    connection: server.connection,
    create: (options = {}) => {
      const log: LoggedStatement[] = [];
      const { poolSize, ...rest } = options;
      return {
        backend: new PostgresLockBackend({ client: logged(pool(poolSize), log), ...rest }),
        log,
      };
    },
    construct: (options) => new PostgresLockBackend(options as PostgresLockBackendOptions),
    rawClient: () => admin,
    wrongClients: () => [new Client(server.connection)], // never connected
    ddl: (table) => postgresStatements(table).ddl,
    exec: async (sql) => void (await admin.query(sql)),
    deleteOwner: async (owner) =>
      void (await admin.query('DELETE FROM distributed_locks WHERE owner = $1', [owner])),
    insertExpired: async (k, agoMs) => {
      await admin.query(
        "INSERT INTO distributed_locks (lock_key, owner, mode, expires_at, fence) VALUES ($1, $2, 'exclusive', clock_timestamp() - $3::bigint * interval '1 millisecond', 1)",
        [k, randomBytes(16).toString('hex'), agoMs],
      );
    },
    holderRows: (k, table = 'distributed_locks') =>
      count(`SELECT count(*) AS n FROM "${table}" WHERE lock_key = $1`, [k]),
    tickets: (k) =>
      count("SELECT count(*) AS n FROM distributed_locks WHERE lock_key = $1 AND mode = 'queued'", [
        k,
      ]),
    residue: (k) => count('SELECT count(*) AS n FROM distributed_locks WHERE lock_key = $1', [k]),
    msLeft: (k) =>
      count(
        'SELECT extract(epoch FROM expires_at - clock_timestamp()) * 1000 AS n FROM distributed_locks WHERE lock_key = $1',
        [k],
      ),
    tableExists: async (table) =>
      (await count('SELECT count(*) AS n FROM pg_tables WHERE tablename = $1', [table])) === 1,
    isRenew: (s) => /^WITH i AS \(SELECT \* FROM unnest/.test(s.sql),
    renewSize: (s) => ((s.values?.[0] as unknown[] | undefined) ?? []).length,
    listeners: () =>
      count(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE query = 'LISTEN "distributed_locks_released"'`,
      ),
    server: {
      stop: () => server.crash(),
      start: () => server.start(),
      pause: () => server.pause(),
      resume: () => server.resume(),
    },
    closeAll: async () => {
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      pools = [];
    },
    destroy: () => server.destroy(),
  };
});

describe('postgres 15: a client frozen inside its acquire transaction', () => {
  let server: PostgresServer;
  let pool: Pool;
  beforeAll(async () => {
    server = await PostgresServer.start();
    pool = new Pool({ ...server.connection, max: 4 });
    pool.on('error', () => undefined);
  });
  afterAll(async () => {
    await pool?.end();
    await server?.destroy();
  });

  it('cannot block a key for long: the server ends its session and the key is acquirable again', async () => {
    const engine = new LockEngine({
      backend: new PostgresLockBackend({ client: pool }),
      keyPrefix: '',
    });
    try {
      const k = 'frozen-mid-transaction';
      const warm = await engine.acquire(k); // creates the table; then frees the key
      await warm.release();
      // A second "process" starts its acquire exactly as the backend does, then freezes holding the key's mutex.
      const sql = postgresStatements('distributed_locks');
      const frozen = new Client(server.connection);
      frozen.on('error', () => undefined);
      await frozen.connect();
      await frozen.query(sql.begin);
      await frozen.query(sql.mutex, [advisoryClass('distributed_locks'), k]);
      const h = await engine.acquire(k, { wait: 20_000 });
      expect(h.held).toBe(true);
      await h.release();
      await expect(frozen.query('SELECT 1')).rejects.toThrow(); // its session was terminated by the server
      await frozen.end().catch(() => undefined);
    } finally {
      await engine.close();
    }
  });
});
