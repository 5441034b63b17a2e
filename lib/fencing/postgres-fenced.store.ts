import { SqlFencedStore, type SqlFencedStoreOptions, type SqlOutcome } from './sql-fenced.store';

/** What the store needs of pg for update() and advance(): `query` (Pool, PoolClient or Client). */
export interface PgQueryableLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** What transaction() needs of a pg Pool: `connect` for a client it releases. */
export interface PgPoolLike extends PgQueryableLike {
  connect(): Promise<PgQueryableLike & { release(error?: Error | boolean): void }>;
}

export type PostgresFencedStoreOptions = SqlFencedStoreOptions<PgQueryableLike | PgPoolLike>;

/**
 * Fenced writes to PostgreSQL over your pg Pool (or a client inside your transaction): a fence
 * column compared and set in the same UPDATE, or a fence table row advanced in the same
 * transaction as your writes (see SqlFencedStore).
 */
export class PostgresFencedStore extends SqlFencedStore<PgQueryableLike | PgPoolLike> {
  constructor(options: PostgresFencedStoreOptions) {
    super('postgres', options);
  }

  protected async exec(q: PgQueryableLike, sql: string, values: unknown[]): Promise<SqlOutcome> {
    const result = await q.query(sql, values);
    return {
      rows: result.rows as Record<string, unknown>[],
      count: result.rowCount ?? 0,
      insertId: 0,
    };
  }

  protected async inTransaction<T>(
    resource: string,
    fn: (tx: PgQueryableLike) => Promise<{ commit: boolean; value: T }>,
  ): Promise<T> {
    const pool = this.client as Partial<PgPoolLike>;
    if (typeof pool.connect !== 'function')
      throw new TypeError('transaction() needs a pg Pool (its connect()); pass a Pool as client');
    const tx = await this.bounded(pool.connect(), resource, (late) => late.release());
    let broken: Error | undefined;
    try {
      await this.bounded(tx.query('BEGIN'), resource);
      const { commit, value } = await fn(tx);
      await this.bounded(tx.query(commit ? 'COMMIT' : 'ROLLBACK'), resource);
      return value;
    } catch (error) {
      // A ROLLBACK that fails or does not answer: the client is dropped, not reused.
      await this.bounded(tx.query('ROLLBACK'), resource).catch((e: Error) => (broken = e));
      throw error;
    } finally {
      tx.release(broken ?? false);
    }
  }
}
