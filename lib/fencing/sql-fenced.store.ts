import { FenceSchemaError } from '../errors/fence-schema.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { FenceStore } from './fence-store.interface';
import { staleReporter, type FenceObserverOptions } from './fencing-events';
import {
  accepted,
  refused,
  toFencingToken,
  type FencedRefused,
  type FencedResult,
  type FencingTokenLike,
} from './fencing-token';
import {
  advanceStatement,
  columnsStatement,
  DEFAULT_FENCE_COLUMN,
  DEFAULT_FENCE_TABLE,
  fenceColumnDdl,
  fencedUpdateStatement,
  fenceTableDdl,
  highestStatement,
  quoteName,
  type FencedUpdateSpec,
  type SqlDialect,
} from './sql-fenced.statements';

/** One statement's outcome, as both dialects can report it. */
export interface SqlOutcome {
  rows: Record<string, unknown>[];
  /** Rows matched (UPDATE) or written (INSERT). */
  count: number;
  /** MySQL's OK-packet insert id (0 when none); PostgreSQL: 0. */
  insertId: number;
}

export interface SqlFencedStoreOptions<Q> extends FenceObserverOptions {
  /** Your pool (or a connection); you keep owning it. */
  client: Q;
  /** The fence table of the table form. Default 'lock_fences'. */
  table?: string;
}

/**
 * What PostgreSQL and MySQL fenced writes share. Two forms:
 * - column form, `update()`: one UPDATE that compares the row's own fence column with the token
 *   and sets both the columns and the fence, in the same statement (no extra round trip);
 * - table form, `advance()` in your transaction, or `transaction()`: one upsert of the fence
 *   table's row for the resource, whose row lock serialises holders until the transaction ends;
 *   your writes in that transaction commit only when the token was current.
 * A refusal costs one more SELECT (to report the highest token); acceptance costs nothing extra.
 */
export abstract class SqlFencedStore<Q> implements FenceStore {
  protected readonly client: Q;
  readonly table: string;
  private readonly report: (refusal: FencedRefused) => void;

  protected constructor(
    protected readonly dialect: SqlDialect,
    options: SqlFencedStoreOptions<Q>,
  ) {
    if (options === null || typeof options !== 'object' || !options.client)
      throw new InvalidLockOptionsError('client', options?.client, `a ${dialect} pool or client`);
    this.client = options.client;
    this.table = options.table ?? DEFAULT_FENCE_TABLE;
    quoteName(dialect, this.table, 'table');
    this.report = staleReporter(dialect, options);
  }

  /** Runs one statement on `q` (the pool, or the caller's transaction client). */
  protected abstract exec(q: Q, sql: string, values: unknown[]): Promise<SqlOutcome>;
  /**
   * BEGIN on a dedicated connection, `fn`, then COMMIT (or ROLLBACK when `fn` says so / throws).
   */
  protected abstract inTransaction<T>(
    fn: (tx: Q) => Promise<{ commit: boolean; value: T }>,
  ): Promise<T>;

  /** The fence table's DDL (what `createTable()` runs). */
  get ddl(): string {
    return fenceTableDdl(this.dialect, this.table);
  }

  /** The DDL that adds a fence column to your table (the column form). */
  columnDdl(table: string, column?: string): string {
    return fenceColumnDdl(this.dialect, table, column);
  }

  /** Creates the fence table if it does not exist. */
  async createTable(): Promise<void> {
    await this.exec(this.client, this.ddl, []);
  }

  /**
   * The column form: UPDATE `spec.table` SET `spec.set`, fence = token WHERE `spec.where` AND the
   * row's fence is NULL or not newer. Accepted with the rows changed (0 when no row matched at
   * all); refused when the matching row carries a newer token. Pass `tx` to run it in your own
   * transaction.
   */
  async update(
    spec: FencedUpdateSpec,
    token: FencingTokenLike,
    tx: Q = this.client,
  ): Promise<FencedResult<number>> {
    const t = toFencingToken(token);
    const { sql, values, select } = fencedUpdateStatement(this.dialect, spec, t.toString());
    const resource = `${spec.table}:${JSON.stringify(spec.where)}`;
    const { count } = await this.exec(tx, sql, values);
    if (count > 0) return accepted(resource, t, count);
    const { rows } = await this.exec(tx, select.sql, select.values);
    const highest = rows[0]?.token;
    if (highest === null || highest === undefined || BigInt(String(highest)) <= t)
      return accepted(resource, t, 0);
    return this.refuse(resource, t, BigInt(String(highest)));
  }

  /**
   * The table form, inside your transaction `tx` (or alone on the pool): records `token` for
   * `resource` unless a newer one is recorded. Refused: roll your transaction back.
   */
  async advance(
    resource: string,
    token: FencingTokenLike,
    tx: Q = this.client,
  ): Promise<FencedResult<void>> {
    if (typeof resource !== 'string' || resource === '' || resource.length > 255)
      throw new InvalidLockOptionsError('resource', resource, 'a non-empty string of <= 255 chars');
    const t = toFencingToken(token);
    const out = await this.exec(tx, advanceStatement(this.dialect, this.table), [
      resource,
      t.toString(),
    ]);
    const stale = this.dialect === 'postgres' ? out.rows.length === 0 : out.insertId !== 0;
    if (!stale) return accepted(resource, t, undefined);
    let highest = BigInt(out.insertId);
    if (this.dialect === 'postgres' || !Number.isSafeInteger(out.insertId)) {
      const { rows } = await this.exec(tx, highestStatement(this.dialect, this.table), [resource]);
      highest = BigInt(String(rows[0]?.token ?? t));
    }
    return this.refuse(resource, t, highest);
  }

  /**
   * BEGIN; advance the fence of `resource`; run `fn(tx)` with your writes; COMMIT. A stale token
   * rolls back before `fn` runs (refused result); `fn` throwing rolls back and rethrows.
   */
  async transaction<T>(
    resource: string,
    token: FencingTokenLike,
    fn: (tx: Q) => Promise<T>,
  ): Promise<FencedResult<T>> {
    return this.inTransaction<FencedResult<T>>(async (tx) => {
      const fence = await this.advance(resource, token, tx);
      if (!fence.accepted) return { commit: false, value: fence };
      return { commit: true, value: accepted(resource, fence.token, await fn(tx)) };
    });
  }

  /**
   * Checks the schema the store relies on, at start-up: the fence table has `resource` (a
   * character type) and `token` (BIGINT), and each of `fenceColumns` is a BIGINT column of its
   * table. Throws InvalidLockOptionsError naming the table, what is missing and the DDL to run.
   */
  async checkSchema(fenceColumns: { table: string; column?: string }[] = []): Promise<void> {
    const fenceTable = {
      table: this.table,
      option: 'table',
      role: `the store's fence table (option table, default ${DEFAULT_FENCE_TABLE})`,
      ddl: this.ddl,
    };
    const expect = [
      { ...fenceTable, column: 'resource', type: /char|text/, expected: 'a character type' },
      { ...fenceTable, column: 'token', type: /^bigint$/, expected: 'bigint' },
      ...fenceColumns.map(({ table, column = DEFAULT_FENCE_COLUMN }, i) => ({
        table,
        option: `checkSchema()[${i}].table`,
        role: 'the fenced table',
        column,
        type: /^bigint$/,
        expected: 'bigint',
        ddl: this.columnDdl(table, column),
      })),
    ];
    const tables = new Map<string, Map<string, string>>();
    for (const e of expect) {
      if (!tables.has(e.table)) {
        const { sql, values } = columnsStatement(this.dialect, e.table);
        const { rows } = await this.exec(this.client, sql, values);
        tables.set(e.table, new Map(rows.map((r) => [String(r.c).toLowerCase(), String(r.d)])));
      }
      const columns = tables.get(e.table) as Map<string, string>;
      const type = columns.get(e.column);
      if (type === undefined || !e.type.test(type))
        throw new FenceSchemaError({ ...e, found: type, tableExists: columns.size > 0 });
    }
  }

  /** The highest token the fence table holds for `resource`, or undefined. */
  async highest(resource: string): Promise<bigint | undefined> {
    const { rows } = await this.exec(this.client, highestStatement(this.dialect, this.table), [
      resource,
    ]);
    const token = rows[0]?.token;
    return token === undefined || token === null ? undefined : BigInt(String(token));
  }

  private refuse(resource: string, token: bigint, highest: bigint): FencedRefused {
    const refusal = refused(resource, token, highest);
    this.report(refusal);
    return refusal;
  }
}
