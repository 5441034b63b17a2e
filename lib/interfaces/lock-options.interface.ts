import type { LockMode } from './lock-backend.interface';

/** What a `@Locked` method does when the lock is held by someone else. */
export type LockOnBusy = 'wait' | 'skip' | 'fail';

/** Options of one acquire (LockService.acquire / tryAcquire / withLock). All durations in ms. */
export interface LockOptions {
  /** ms the lock survives a silent holder; the watchdog renews it every ttl/3 while held. */
  ttl?: number;
  /** ms to wait for a busy lock (a deadline, not a retry count). 0 = try once. */
  wait?: number;
  /** 'exclusive' (default) or 'shared' (many readers, or one writer). */
  mode?: LockMode;
  /** Name of a backend registered with `backends`; default 'default'. */
  backend?: string;
  /**
   * Stop renewing after this many ms held (ShedLock's lockAtMostFor); the lock then expires ttl
   * later and the handle signals loss.
   */
  maxHold?: number;
  /**
   * Keep the lock at least this many ms from the grant (ShedLock's lockAtLeastFor): when the work
   * ends earlier, the lock stays held, unrenewed, until then, so an instance whose clock (or
   * scheduler) runs late still finds it busy and skips the same tick. See docs/guide/scheduling.md.
   */
  minHold?: number;
  /**
   * A semaphore: at most this many holders of `key` at once (an integer from 1; exclusive mode,
   * one key). Each grant is a handle like a lock's. See docs/guide/semaphores.md.
   */
  permits?: number;
  /** Cancels a wait; acquire rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Options of `@Locked(key, options)`. */
export interface LockedOptions extends Omit<LockOptions, 'signal'> {
  /**
   * 'wait' (default) waits up to `wait`; 'skip' returns undefined without running; 'fail' throws at
   * once.
   */
  onBusy?: LockOnBusy;
  /**
   * ms a busy answer tells clients to wait before retrying (Retry-After, `retryAfter` in payloads),
   * rounded up to whole seconds. Default: the holder's remaining ttl or this key's recent average
   * hold, whichever is longer (the average alone where the backend cannot report the ttl).
   */
  retryAfter?: number;
}

/** Defaults applied to every acquire unless the call overrides them. */
export interface LockDefaults {
  ttl?: number;
  wait?: number;
  mode?: LockMode;
  onBusy?: LockOnBusy;
  maxHold?: number;
  minHold?: number;
}

/** Fully resolved, validated options of one acquire. */
export interface ResolvedLockOptions {
  ttl: number;
  wait: number;
  mode: LockMode;
  backend: string;
  maxHold: number | undefined;
  minHold: number | undefined;
  signal: AbortSignal | undefined;
}
