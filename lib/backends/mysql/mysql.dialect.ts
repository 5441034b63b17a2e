import { toBigInt } from '../../backend-kit';
import { keyRange } from '../sql/sql-listing';
import type { SqlConnection, SqlDialect, SqlResult } from '../sql/sql.dialect';
import type { MySqlConnectionLike, MySqlPoolLike, MySqlResult } from './mysql.options';
import { renewLocks } from './mysql.renew';
import { mysqlStatements, type MySqlStatements } from './mysql.schema';

/**
 * The MySQL/MariaDB dialect of the SQL backend: its statements (mysql.schema.ts), keys bound as
 * their UTF-8 bytes, a mysql2/promise pool connection as a SqlConnection, the fence from a counter
 * row (LAST_INSERT_ID), renewals in fixed shapes (mysql.renew.ts), and the sweep.
 */
export function mysqlDialect(table: string): SqlDialect<MySqlPoolLike, MySqlStatements> {
  const sql = mysqlStatements(table);
  return {
    statements: sql,
    key: bytes,
    mutexValues: (key) => [key],
    tableRef: table,
    connect: async (pool) => mysqlConnection(await pool.getConnection()),
    async grant(conn, g) {
      if (g.purge) await conn.run(sql.purge, [g.key]);
      // LAST_INSERT_ID(expr) hands the new value back in the OK packet: one round trip.
      const { insertId } = await conn.run(sql.nextFence, []);
      const fencingToken = toBigInt(insertId, 'mysql');
      // The row's expiry is dated by the server when this statement runs: date our validity from
      // just before sending it, never from before the waits for a pooled connection or the key's
      // mutex row.
      const sentAt = performance.now();
      const token = fencingToken.toString();
      const row = [g.key, g.owner, g.stored, g.ttl * 1000, token];
      const update = [g.stored, g.ttl * 1000, token];
      if (g.holder === undefined) await conn.run(sql.insertBare, [...row, ...update]);
      else await conn.run(sql.insert, [...row, g.holder, ...update, g.holder]);
      return { fencingToken, sentAt };
    },
    renew: (conn, locks) => renewLocks(conn, sql, locks),
    /**
     * A range of the primary key (lock_key, owner) from the prefix's bytes to their successor.
     * Sent as a text-protocol query (not prepared): LIMIT's value would otherwise need its own
     * shape.
     */
    async list(conn, prefix, limit) {
      const { from, to } = keyRange(bytes(prefix));
      const { rows } = await conn.query(sql.list, [from, to, to, limit]);
      return (rows as { lock_key: Buffer }[]).map((r) => Buffer.from(r.lock_key).toString('utf8'));
    },
    /** Rows that expired over a minute ago, then mutex rows left without holders. */
    async sweep(conn, graceMs) {
      await conn.query(sql.readCommitted);
      await conn.run(sql.sweepHolders, [graceMs * 1000]);
      await conn.query(sql.readCommitted);
      await conn.query(sql.sweepKeys);
    },
    async createTables(conn) {
      for (const statement of sql.ddl) await conn.query(statement);
    },
  };
}

/**
 * Keys travel as their UTF-8 bytes (a binary parameter into a VARBINARY column): no connection
 * character set can transcode them, so two different keys can never arrive as the same bytes.
 */
function bytes(key: string): Buffer {
  return Buffer.from(key, 'utf8');
}

/** A mysql2/promise pool connection as the shared code uses it (run = a prepared statement). */
export function mysqlConnection(conn: MySqlConnectionLike): SqlConnection {
  return {
    run: (text, values) => conn.execute(text, (values ?? []) as never).then(toResult),
    query: (text, values) =>
      (values === undefined ? conn.query(text) : conn.query(text, [...values])).then(toResult),
    release: () => conn.release(),
    destroy: () => conn.destroy(),
  };
}

/** mysql2's [rows, fields] or [ResultSetHeader, undefined]. */
function toResult([answer]: MySqlResult): SqlResult {
  if (Array.isArray(answer)) return { rows: answer, affected: answer.length };
  const header = answer as { affectedRows?: number; insertId?: unknown };
  return { rows: [], affected: Number(header.affectedRows ?? 0), insertId: header.insertId };
}
