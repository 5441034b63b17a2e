import { SqlFencedStore, type SqlFencedStoreOptions, type SqlOutcome } from './sql-fenced.store';

/** What the store needs of mysql2/promise: `query`; `getConnection` for transaction(). */
export interface MySqlQueryableLike {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>;
  getConnection?(): Promise<MySqlQueryableLike & { release(): void; destroy?(): void }>;
}

export type MySqlFencedStoreOptions = SqlFencedStoreOptions<MySqlQueryableLike>;

/**
 * Fenced writes to MySQL and MariaDB over your mysql2/promise pool (or a connection inside your
 * transaction); the same two forms as PostgresFencedStore. Rows matched are read from the OK
 * packet's info ("Rows matched: N"), so the pool's FOUND_ROWS flag does not change the answer.
 */
export class MySqlFencedStore extends SqlFencedStore<MySqlQueryableLike> {
  constructor(options: MySqlFencedStoreOptions) {
    super('mysql', options);
  }

  protected async exec(q: MySqlQueryableLike, sql: string, values: unknown[]): Promise<SqlOutcome> {
    const [result] = await q.query(sql, values);
    if (Array.isArray(result)) return { rows: result, count: result.length, insertId: 0 };
    const header = result as { affectedRows?: number; insertId?: number; info?: string };
    const matched = /Rows matched: (\d+)/.exec(header.info ?? '');
    const count = matched ? Number(matched[1]) : (header.affectedRows ?? 0);
    return { rows: [], count, insertId: Number(header.insertId ?? 0) };
  }

  protected async inTransaction<T>(
    resource: string,
    fn: (tx: MySqlQueryableLike) => Promise<{ commit: boolean; value: T }>,
  ): Promise<T> {
    if (typeof this.client.getConnection !== 'function')
      throw new TypeError('transaction() needs a mysql2 pool (its getConnection()); pass the pool');
    const tx = await this.bounded(this.client.getConnection(), resource, (late) => late.release());
    let broken = false;
    try {
      await this.bounded(tx.query('START TRANSACTION'), resource);
      const { commit, value } = await fn(tx);
      await this.bounded(tx.query(commit ? 'COMMIT' : 'ROLLBACK'), resource);
      return value;
    } catch (error) {
      // A ROLLBACK that fails or does not answer: the connection is dropped, not reused.
      await this.bounded(tx.query('ROLLBACK'), resource).catch(() => (broken = true));
      throw error;
    } finally {
      if (broken && typeof tx.destroy === 'function') tx.destroy();
      else tx.release();
    }
  }
}
