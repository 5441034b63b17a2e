import { toBigInt } from '../../backend-kit';
import { textKeyRange } from '../sql/sql-listing';
import type { SqlConnection, SqlDialect, SqlResult } from '../sql/sql.dialect';
import type { PgPoolClientLike, PgPoolLike, PgQueryResultLike } from './postgres.options';
import { advisoryClass, postgresStatements, type PostgresStatements } from './postgres.schema';

/**
 * The PostgreSQL dialect of the SQL backend: its statements (postgres.schema.ts), keys bound as
 * text, a pg PoolClient as a SqlConnection, the per-key mutex as a transaction-scoped advisory lock
 * of the table's class, the fence from a sequence inside the grant's statement, one renewal
 * statement for a whole batch, and the sweep.
 */
export function postgresDialect(table: string): SqlDialect<PgPoolLike, PostgresStatements> {
  const sql = postgresStatements(table);
  const classId = advisoryClass(table);
  return {
    statements: sql,
    key: (key) => key,
    mutexValues: (key) => [classId, key],
    tableRef: `"${table}"`,
    connect: async (pool) => pgConnection(await pool.connect()),
    async grant(conn, g) {
      // The server dates the row's expiry when this statement runs: date our validity from just
      // before sending it, never from before the waits for a pooled client or the key's advisory
      // lock. The statement purges the key's expired rows itself.
      const sentAt = performance.now();
      const row = [g.key, g.owner, g.stored, g.ttl];
      const { rows } =
        g.holder === undefined
          ? await conn.run(g.ticket ? sql.grantTicketBare : sql.grantBare, row)
          : await conn.run(g.ticket ? sql.grantTicket : sql.grant, [...row, g.holder || null]);
      return { fencingToken: toBigInt(rows[0].fence, 'postgres'), sentAt };
    },
    async renew(conn, locks) {
      const values = [locks.map((l) => l.key), locks.map((l) => l.owner), locks.map((l) => l.ttl)];
      const { rows } = await conn.run(sql.renew, values);
      const renewed = new Set(
        (rows as { lock_key: string; owner: string }[]).map((r) => `${r.owner}:${r.lock_key}`),
      );
      return locks.map((l) => renewed.has(`${l.owner}:${l.key}`));
    },
    /** One range scan of the COLLATE "C" key index. */
    async list(conn, prefix, limit) {
      const { from, to } = textKeyRange(prefix);
      const { rows } = await conn.run(sql.list, [from, to, limit]);
      return (rows as { lock_key: string }[]).map((r) => r.lock_key);
    },
    async sweep(conn, graceMs) {
      await conn.run(sql.sweep, [graceMs]);
    },
    async createTables(conn) {
      // Concurrent CREATE ... IF NOT EXISTS can still collide in the catalog: serialize them.
      await conn.query('BEGIN');
      await conn.query('SELECT pg_advisory_xact_lock($1::int4, 0)', [classId]);
      for (const statement of sql.ddl) await conn.query(statement);
      await conn.query('COMMIT');
    },
  };
}

/**
 * A checked-out pg client as the shared code uses it. While a client is checked out, pg emits a
 * dropped connection as an 'error' event on it (the pool listens only to idle clients): without a
 * listener that would crash the process. The failing query rejects as well, which is what we act
 * on.
 */
function pgConnection(client: PgPoolClientLike): SqlConnection {
  const ignore = () => undefined;
  client.on('error', ignore);
  const query = (text: string, values?: readonly unknown[]) =>
    (values === undefined ? client.query(text) : client.query(text, [...values])).then(toResult);
  const back = (destroy: boolean) => {
    client.removeListener('error', ignore);
    if (destroy) client.release(true);
    else client.release();
  };
  return { run: query, query, release: () => back(false), destroy: () => back(true) };
}

/** A pg result; a multi-statement text (no values) answers with one per statement: the last. */
function toResult(answer: PgQueryResultLike | PgQueryResultLike[]): SqlResult {
  const r = Array.isArray(answer) ? answer[answer.length - 1] : answer;
  return { rows: r.rows, affected: r.rowCount ?? r.rows.length };
}
