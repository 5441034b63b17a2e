import { checkLockKey } from '../../backend-kit';
import { MAX_DURATION_MS } from '../../distributed-lock.constants';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LockMode } from '../../interfaces/lock-backend.interface';

/**
 * Rules shared by the MySQL/MariaDB and PostgreSQL backends: which live holders block a request,
 * and how long until they are expected to be gone; plus the checks on the options both take.
 * Both backends store one row per holder (PRIMARY KEY (lock_key, owner)) with an expiry in the
 * database server's clock, and decide under a per-key mutex with every holder row of the key locked.
 */
export interface HolderRow {
  readonly owner: string;
  readonly mode: LockMode;
  /** Microseconds until the row expires, by the server's clock (<= 0: expired). */
  readonly leftUs: number;
}

export type Decision = { readonly blocked: false; readonly expired: number } | { readonly blocked: true; readonly retryAfter: number };

/**
 * An exclusive request is blocked by any live holder; a shared one only by a live exclusive holder.
 * retryAfter = ms until the last blocker expires (the earliest moment the request could succeed
 * without a release).
 */
export function decide(rows: readonly HolderRow[], mode: LockMode): Decision {
  let expired = 0;
  let longest = -1;
  for (const row of rows) {
    if (row.leftUs <= 0) {
      expired++;
      continue;
    }
    if (mode === 'exclusive' || row.mode === 'exclusive') longest = Math.max(longest, row.leftUs);
  }
  if (longest >= 0) return { blocked: true, retryAfter: Math.max(1, Math.ceil(longest / 1000)) };
  return { blocked: false, expired };
}

/** Lower-case plain identifiers only: the table name is spliced into SQL, so nothing else may pass. */
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,47}$/;
export const DEFAULT_TABLE = 'distributed_locks';

export function checkTableName(table: unknown): string {
  if (typeof table !== 'string' || !TABLE_NAME.test(table)) {
    throw new InvalidLockOptionsError('table', table, 'a plain lower-case SQL identifier: [a-z_][a-z0-9_]*, at most 48 characters (no schema, quotes or spaces)');
  }
  return table;
}

export function checkKnownOptions(backend: string, options: object, known: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new InvalidLockOptionsError(name, (options as Record<string, unknown>)[name], `one of ${known.join(', ')} (unknown ${backend} option)`);
    }
  }
}

export function checkBoolean(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidLockOptionsError(option, value, 'true or false');
  return value;
}

/** 0 (never) or an interval in ms of at least one second; default one minute. */
export function checkSweepInterval(value: unknown): number {
  if (value === undefined) return 60_000;
  if (value === 0) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1_000 || value > MAX_DURATION_MS) {
    throw new InvalidLockOptionsError('sweepInterval', value, `0 (never) or an integer number of ms from 1000 to ${MAX_DURATION_MS}`);
  }
  return value;
}

/** Converts a driver's integer (number, bigint or decimal string) to bigint. */
export function toBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^\d+$/.test(value)) return BigInt(value);
  throw new Error(`expected an integer fencing token from the database, got ${String(value)}`);
}

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The core's key checks, plus well-formed Unicode: a lone UTF-16 surrogate has no UTF-8 form and
 * would be sent as U+FFFD, so '\uD800' and '\uD801' would become the same lock.
 */
export function checkSqlKey(key: string, maxLength: number): string {
  checkLockKey(key, maxLength);
  if (LONE_SURROGATE.test(key)) throw new InvalidLockOptionsError('key', key, 'well-formed Unicode (no lone UTF-16 surrogates)');
  return key;
}
