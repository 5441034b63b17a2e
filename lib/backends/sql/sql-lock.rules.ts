import { checkLockKey } from '../../backend-kit';
import type { LockMode } from '../../interfaces/lock-backend.interface';

/**
 * The decision both SQL backends (MySQL/MariaDB, PostgreSQL) take inside an acquire: which live
 * holders block a request, and how long until they are expected to be gone. Both store one row per
 * holder (PRIMARY KEY (lock_key, owner)) with an expiry in the database server's clock, and decide
 * under a per-key mutex with every holder row of the key locked, so the decision cannot go stale
 * before the transaction commits.
 */
export interface HolderRow {
  readonly owner: string;
  readonly mode: LockMode;
  /** Microseconds until the row expires, by the server's clock (<= 0: expired). */
  readonly leftUs: number;
}

export type Decision =
  | { readonly blocked: false; readonly expired: number }
  | { readonly blocked: true; readonly retryAfter: number };

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

/**
 * The kit's key checks (length, control characters, lone surrogates: a lone UTF-16 surrogate has
 * no UTF-8 form and would be sent as U+FFFD, so '\uD800' and '\uD801' would become one lock), for
 * callers that reach the backend without the engine.
 */
export function checkSqlKey(key: string, maxLength: number): string {
  return checkLockKey(key, maxLength);
}
