import { FenceSchemaError } from '../errors/fence-schema.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { FenceStore } from './fence-store.interface';
import { boundedFenceCall, fenceTimeout } from './fence-timeout';
import { staleReporter, type FenceObserverOptions } from './fencing-events';
import {
  accepted,
  refused,
  toFencingGrant,
  type FencedRefused,
  type FencedResult,
  type FencingTokenLike,
} from './fencing-token';
import {
  columnsStatement,
  DEFAULT_FENCE_COLUMN,
  DEFAULT_FENCE_TABLE,
  fenceColumnDdl,
  fenceColumnRules,
  fenceTableDdl,
  fenceTableRules,
  addColumnDdl,
  quoteName,
  type ColumnInfo,
  type ColumnRule,
  type SqlDialect,
} from './sql-fenced.schema';
import {
  advanceStatement,
  fencedUpdateStatement,
  highestStatement,
  resetStatement,
  type FencedUpdateSpec,
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
  /** Ms to wait for a statement's answer (LockBackendUnavailableError after). Default 5,000. */
  timeout?: number;
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
  private readonly timeout: number;

  protected constructor(
    protected readonly dialect: SqlDialect,
    options: SqlFencedStoreOptions<Q>,
  ) {
    if (options === null || typeof options !== 'object' || !options.client)
      throw new InvalidLockOptionsError('client', options?.client, `a ${dialect} pool or client`);
    this.client = options.client;
    this.table = options.table ?? DEFAULT_FENCE_TABLE;
    quoteName(dialect, this.table, 'table');
    this.timeout = fenceTimeout(options.timeout);
    this.report = staleReporter(dialect, options);
  }

  /** Runs one statement on `q` (the pool, or the caller's transaction client). */
  protected abstract exec(q: Q, sql: string, values: unknown[]): Promise<SqlOutcome>;
  /**
   * BEGIN on a dedicated connection, `fn`, then COMMIT (or ROLLBACK when `fn` says so / throws).
   */
  protected abstract inTransaction<T>(
    resource: string,
    fn: (tx: Q) => Promise<{ commit: boolean; value: T }>,
  ): Promise<T>;

  /**
   * `op` bounded by the store's `timeout` (LockBackendUnavailableError after it); a value that
   * arrives late (a connection) goes to `onLate`.
   */
  protected bounded<T>(op: Promise<T>, resource: string, onLate?: (late: T) => void): Promise<T> {
    return boundedFenceCall(op, this.timeout, this.dialect, resource, onLate);
  }

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
    await this.run(this.client, this.ddl, [], this.table);
  }

  /** One statement, bounded by `timeout`. */
  private run(q: Q, sql: string, values: unknown[], resource: string): Promise<SqlOutcome> {
    return this.bounded(this.exec(q, sql, values), resource);
  }

  /**
   * The column form: UPDATE `spec.table` SET `spec.set`, fence = token WHERE `spec.where` AND the
   * token is current for every matched row. Accepted with the rows changed (0 when no row matched
   * at all); refused as a whole when any matched row carries a newer token, or this token from
   * another grant (no row is written then). Pass `tx` to run it in your own transaction.
   */
  async update(
    spec: FencedUpdateSpec,
    token: FencingTokenLike,
    tx: Q = this.client,
  ): Promise<FencedResult<number>> {
    const { token: t, grant } = toFencingGrant(token);
    const statement = fencedUpdateStatement(this.dialect, spec, t.toString(), grant);
    const resource = `${spec.table}:${JSON.stringify(spec.where)}`;
    const { count } = await this.run(tx, statement.sql, statement.values, resource);
    if (count > 0) return accepted(resource, t, count);
    const { rows } = await this.run(tx, statement.select.sql, statement.select.values, resource);
    const highest = rows[0]?.token;
    if (highest !== null && highest !== undefined && BigInt(String(highest)) > t)
      return this.refuse(resource, t, BigInt(String(highest)));
    if (Number(rows[0]?.taken ?? 0) > 0) return this.refuse(resource, t, t);
    return accepted(resource, t, 0);
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
    const { token: t, grant } = toFencingGrant(token);
    const sql = advanceStatement(this.dialect, this.table);
    const out = await this.run(tx, sql, [resource, t.toString(), grant], resource);
    const stale = this.dialect === 'postgres' ? out.rows.length === 0 : out.insertId !== 0;
    if (!stale) return accepted(resource, t, undefined);
    // MySQL's insert id is highest + 1 (exact below 2^53); otherwise read the row.
    let highest = BigInt(out.insertId) - 1n;
    if (this.dialect === 'postgres' || !Number.isSafeInteger(out.insertId)) {
      const select = highestStatement(this.dialect, this.table);
      const { rows } = await this.run(tx, select, [resource], resource);
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
    return this.inTransaction<FencedResult<T>>(resource, async (tx) => {
      const fence = await this.advance(resource, token, tx);
      if (!fence.accepted) return { commit: false, value: fence };
      return { commit: true, value: accepted(resource, fence.token, await fn(tx)) };
    });
  }

  /**
   * Checks the schema the store relies on, at start-up: the fence table has `resource` and
   * `grant_id` (compared exactly: on MySQL binary, so no collation folds two resources into one)
   * and `token` (BIGINT), and no AUTO_INCREMENT column (MySQL reads a refusal from the insert id);
   * each of `fenceColumns` is a BIGINT column with its grant column `<column>_grant`. Throws
   * InvalidLockOptionsError naming the table, what is wrong and the DDL to run.
   */
  async checkSchema(fenceColumns: { table: string; column?: string }[] = []): Promise<void> {
    const fenceTable = {
      option: 'table',
      role: `the store's fence table (option table, default ${DEFAULT_FENCE_TABLE})`,
    };
    const expect: {
      table: string;
      option: string;
      role: string;
      rules: Record<string, ColumnRule>;
      ddl: string;
    }[] = [
      { ...fenceTable, table: this.table, rules: fenceTableRules(this.dialect), ddl: this.ddl },
      ...fenceColumns.map(({ table, column = DEFAULT_FENCE_COLUMN }, i) => ({
        table,
        option: `checkSchema()[${i}].table`,
        role: 'the fenced table',
        rules: fenceColumnRules(this.dialect, column),
        ddl: this.columnDdl(table, column),
      })),
    ];
    for (const e of expect) {
      const { sql, values } = columnsStatement(this.dialect, e.table);
      const { rows } = await this.run(this.client, sql, values, e.table);
      const columns = new Map<string, ColumnInfo>(
        rows.map((r) => [
          String(r.c).toLowerCase(),
          { type: String(r.d), collation: String(r.k ?? ''), extra: String(r.e ?? '') },
        ]),
      );
      for (const [name, rule] of Object.entries(e.rules)) {
        const found = columns.get(name);
        if (found === undefined || !rule.test(found))
          throw new FenceSchemaError({
            ...e,
            column: name,
            expected: rule.describe,
            found: found && `${found.type} ${found.collation}`.trim(),
            tableExists: columns.size > 0,
            // A table that lacks one column gets that column; a missing table its whole DDL.
            ddl:
              found === undefined && rule.add && columns.size > 0
                ? addColumnDdl(this.dialect, e.table, name, rule.add)
                : e.ddl,
          });
      }
      const counter = [...columns].find(([, c]) => c.extra.includes('auto_increment'));
      if (e.table === this.table && counter)
        throw new InvalidLockOptionsError(
          'table',
          e.table,
          `a fence table without AUTO_INCREMENT columns (found ${counter[0]}: its insert ids ` +
            `would read as refusals); create it with: ${this.ddl}`,
        );
    }
  }

  /**
   * Forgets `resource`'s row in the fence table (an operator's reset, e.g. after a forged
   * `@Fenced` call shut the real holders out); the next token is accepted. True when there was one.
   */
  async reset(resource: string, tx: Q = this.client): Promise<boolean> {
    const out = await this.run(tx, resetStatement(this.dialect, this.table), [resource], resource);
    return out.count > 0;
  }

  /** The highest token the fence table holds for `resource`, or undefined. */
  async highest(resource: string): Promise<bigint | undefined> {
    const select = highestStatement(this.dialect, this.table);
    const { rows } = await this.run(this.client, select, [resource], resource);
    const token = rows[0]?.token;
    return token === undefined || token === null ? undefined : BigInt(String(token));
  }

  private refuse(resource: string, token: bigint, highest: bigint): FencedRefused {
    const refusal = refused(resource, token, highest);
    this.report(refusal);
    return refusal;
  }
}
