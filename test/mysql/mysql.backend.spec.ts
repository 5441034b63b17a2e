import { randomBytes } from 'node:crypto';
import { createPool, type Pool } from 'mysql2/promise';
import {
  MySqlLockBackend,
  type MySqlLockBackendOptions,
  type MySqlPoolLike,
} from '../../lib/backends/mysql';
import { mysqlStatements } from '../../lib/backends/mysql/mysql.schema';
import { LockEngine } from '../../lib/core/lock-engine';
import { MariaDbServer } from '../support/mariadb-server';
import { describeSqlBackend, type LoggedStatement } from '../sql/sql-backend.cases';

/** Counts what a backend sends, over a real mysql2 pool (nothing is faked). */
function logged(pool: Pool, log: LoggedStatement[]): MySqlPoolLike {
  return {
    pool: pool.pool, // its connectionLimit sizes blockingWaiters
    getConnection: async () => {
      const conn = await pool.getConnection();
      return {
        query: (sql, values) => (log.push({ sql, values }), conn.query(sql, values)),
        execute: (sql, values) => (log.push({ sql, values }), conn.execute(sql, values)),
        release: () => conn.release(),
        destroy: () => conn.destroy(),
      };
    },
  };
}

describeSqlBackend('mysql (MariaDB 10.11)', async () => {
  const server = await MariaDbServer.start();
  let pools: Pool[] = [];
  const pool = (size = 4) => {
    const p = createPool({ ...server.connection, connectionLimit: size, connectTimeout: 2_000 });
    pools.push(p);
    return p;
  };
  const admin = pool();
  const count = async (sql: string, values: string[]) => {
    const [rows] = await admin.query(sql, values);
    return Number((rows as { n: number }[])[0].n);
  };
  return {
    kind: 'mysql',
    connection: server.connection,
    create: (options = {}) => {
      const log: LoggedStatement[] = [];
      const { poolSize, ...rest } = options;
      return {
        backend: new MySqlLockBackend({ client: logged(pool(poolSize), log), ...rest }),
        log,
      };
    },
    construct: (options) => new MySqlLockBackend(options as MySqlLockBackendOptions),
    rawClient: () => admin,
    wrongClients: () => [admin.pool], // the callback-style pool under the promise one (never connected here)
    ddl: (table) => mysqlStatements(table).ddl,
    exec: async (sql) => void (await admin.query(sql)),
    deleteOwner: async (owner) =>
      void (await admin.execute('DELETE FROM distributed_locks WHERE owner = ?', [owner])),
    insertExpired: async (k, agoMs) => {
      await admin.execute('INSERT INTO distributed_locks_keys (lock_key) VALUES (?)', [k]);
      await admin.execute(
        "INSERT INTO distributed_locks (lock_key, owner, mode, expires_at, fence) VALUES (?, ?, 'exclusive', UTC_TIMESTAMP(3) - INTERVAL ? MICROSECOND, 1)",
        [k, randomBytes(16).toString('hex'), agoMs * 1000],
      );
    },
    holderRows: (k, table = 'distributed_locks') =>
      count(`SELECT COUNT(*) AS n FROM \`${table}\` WHERE lock_key = ?`, [k]),
    tickets: (k) =>
      count("SELECT COUNT(*) AS n FROM distributed_locks WHERE lock_key = ? AND mode = 'queued'", [
        k,
      ]),
    residue: (k) =>
      count(
        'SELECT (SELECT COUNT(*) FROM distributed_locks WHERE lock_key = ?) + (SELECT COUNT(*) FROM distributed_locks_keys WHERE lock_key = ?) AS n',
        [k, k],
      ),
    msLeft: (k) =>
      count(
        'SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) / 1000 AS n FROM distributed_locks WHERE lock_key = ?',
        [k],
      ),
    tableExists: async (table) =>
      (await count(
        'SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?',
        [table],
      )) === 1,
    isRenew: (s) => /^UPDATE `\w+` AS h JOIN/.test(s.sql),
    // Rows with a non-empty key: batches are padded to a fixed shape with empty keys.
    renewSize: (s) =>
      (s.values ?? []).filter((v, i) => i % 3 === 0 && (v as Buffer).length > 0).length,
    server: {
      stop: () => server.kill(),
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

describe('mysql (MariaDB 10.11): a pool with a non-UTF-8 connection character set', () => {
  let server: MariaDbServer;
  let pool: Pool;
  beforeAll(async () => {
    server = await MariaDbServer.start();
    pool = createPool({ ...server.connection, charset: 'LATIN1_SWEDISH_CI', connectionLimit: 2 });
  });
  afterAll(async () => {
    await pool?.end();
    await server?.destroy();
  });

  it('keys that latin1 cannot represent stay distinct (they travel as UTF-8 bytes, never transcoded to "?")', async () => {
    const engine = new LockEngine({
      backend: new MySqlLockBackend({ client: pool }),
      keyPrefix: '',
    });
    try {
      const emoji = await engine.acquire('latin1:😀', { wait: 0 });
      const question = await engine.acquire('latin1:?', { wait: 0 }); // would be the same row if transcoded
      const macron = await engine.acquire('latin1:ā', { wait: 0 });
      const [rows] = await pool.query(
        'SELECT HEX(lock_key) AS k FROM distributed_locks ORDER BY lock_key',
      );
      expect(
        (rows as { k: string }[]).map((r) => Buffer.from(r.k, 'hex').toString('utf8')).sort(),
      ).toEqual(['latin1:?', 'latin1:ā', 'latin1:😀'].sort());
      await Promise.all([emoji.release(), question.release(), macron.release()]);
    } finally {
      await engine.close();
    }
  });
});
