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
  /** A holder's mode, or 'semaphore' for a permit of the key's semaphore (SemaphoreBackend). */
  readonly mode: StoredMode;
  /** Microseconds until the row expires, by the server's clock (<= 0: expired). */
  readonly leftUs: number;
}

/**
 * What a holder row's `mode` column stores: a lock's mode, or 'semaphore' for one permit of a
 * native semaphore. Permits and the key's lock are independent (as in the memory backend and in the
 * core's permit-lock semaphores): a lock request ignores permit rows and a permit request counts
 * only permit rows.
 */
export type StoredMode = LockMode | 'semaphore';

/** The mode a request's row is stored with. */
export function storedMode(mode: LockMode, permits: number | undefined): StoredMode {
  return permits === undefined ? mode : 'semaphore';
}

export type Decision =
  | { readonly blocked: false; readonly expired: number }
  | { readonly blocked: true; readonly retryAfter: number };

/**
 * An exclusive request is blocked by any live lock holder; a shared one only by a live exclusive
 * holder; retryAfter = ms until the last blocker expires (the earliest moment the request could
 * succeed without a release). A semaphore request (`permits`) is blocked while at least ITS OWN
 * `permits` permits are live (Curator's rule: holders that asked for another N each count against
 * their own N); retryAfter = ms until the first permit expires.
 */
export function decide(rows: readonly HolderRow[], mode: LockMode, permits?: number): Decision {
  let expired = 0;
  let longest = -1;
  let live = 0;
  let soonest = Infinity;
  for (const row of rows) {
    if (row.leftUs <= 0) {
      expired++;
      continue;
    }
    if (permits !== undefined) {
      if (row.mode === 'semaphore') {
        live++;
        soonest = Math.min(soonest, row.leftUs);
      }
      continue;
    }
    if (row.mode === 'semaphore') continue;
    if (mode === 'exclusive' || row.mode === 'exclusive') longest = Math.max(longest, row.leftUs);
  }
  if (permits !== undefined && live >= permits) longest = soonest;
  if (longest >= 0) return { blocked: true, retryAfter: Math.max(1, Math.ceil(longest / 1000)) };
  return { blocked: false, expired };
}
