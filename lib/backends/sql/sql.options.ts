import {
  checkBoolean,
  checkDuration,
  checkOptionsObject,
  MAX_DURATION_MS,
} from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { SqlClientSource, type SqlPoolKind } from './sql-client';

/**
 * Options both SQL backends take, and their one validation. Only the table name is ever spliced
 * into SQL, so it must be a plain lower-case identifier; every other value is a bound parameter.
 */
export interface SqlBackendOptions {
  /**
   * Base name of the backend's tables. Plain lower-case identifier. Default 'distributed_locks'.
   */
  table?: string;
  /**
   * Create the tables if missing (default true). false: a DBA creates them from the documented DDL.
   */
  createTable?: boolean;
  /** Longest pause between two polls of a waiter that has no wake-up, in ms. */
  maxPollDelay?: number;
  /**
   * ms between sweeps of rows expired for over a minute (keys nobody locks again); default 60000, 0
   * = never.
   */
  sweepInterval?: number;
}

export interface ResolvedSqlOptions {
  readonly table: string;
  readonly createTable: boolean;
  readonly maxPollDelay: number;
  readonly sweepInterval: number;
}

const SQL_OPTIONS = [
  'client',
  'clientFactory',
  'table',
  'createTable',
  'maxPollDelay',
  'sweepInterval',
];
export const DEFAULT_TABLE = 'distributed_locks';

/** One backend's options: its name, its own option names, its poll default, its driver's pool. */
export interface SqlOptionsSpec<P> {
  readonly backend: string;
  readonly extra: readonly string[];
  readonly defaultPollDelay: number;
  readonly pool: SqlPoolKind<P>;
}

/**
 * Checks the options object (unknown names fail, naming them), resolves the shared options, and
 * makes the pool source (`{ client }` xor `{ clientFactory }`).
 */
export function resolveSqlOptions<T extends SqlBackendOptions, P>(
  options: unknown,
  spec: SqlOptionsSpec<P>,
): T & ResolvedSqlOptions & { readonly source: SqlClientSource<P> } {
  const o = checkOptionsObject<T>(
    `${spec.backend} options`,
    options,
    [...SQL_OPTIONS, ...spec.extra],
    '{ client } or { clientFactory }, plus table?, createTable?, ...',
  );
  return {
    ...o,
    table: o.table === undefined ? DEFAULT_TABLE : checkTableName(o.table),
    createTable: checkBoolean('createTable', o.createTable, true),
    maxPollDelay:
      o.maxPollDelay === undefined
        ? spec.defaultPollDelay
        : checkDuration('maxPollDelay', o.maxPollDelay, 1),
    sweepInterval: checkSweepInterval(o.sweepInterval),
    source: SqlClientSource.from(o as { client?: unknown; clientFactory?: unknown }, spec.pool),
  };
}

/**
 * Lower-case plain identifiers only: the table name is spliced into SQL, so nothing else may pass.
 */
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

export function checkTableName(table: unknown): string {
  if (typeof table !== 'string' || !TABLE_NAME.test(table)) {
    throw new InvalidLockOptionsError(
      'table',
      table,
      'a plain lower-case SQL identifier: [a-z_][a-z0-9_]*, at most 48 characters (no schema, quotes or spaces)',
    );
  }
  return table;
}

/** 0 (never) or an interval in ms of at least one second; default one minute. */
export function checkSweepInterval(value: unknown): number {
  if (value === undefined) return 60_000;
  if (value === 0) return 0;
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 1_000 ||
    value > MAX_DURATION_MS
  ) {
    throw new InvalidLockOptionsError(
      'sweepInterval',
      value,
      `0 (never) or an integer number of ms from 1000 to ${MAX_DURATION_MS}`,
    );
  }
  return value;
}
