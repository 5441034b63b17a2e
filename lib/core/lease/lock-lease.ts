import { safeValidity } from '../../backend-kit/validity';
import { LockLostError } from '../../errors/lock-lost.error';
import type { BackendLock, LockBackend, LockMode } from '../../interfaces/lock-backend.interface';

export type LeaseState = 'held' | 'released' | 'lost';

/**
 * What renews and releases a grant: the backend itself for a lock, its SemaphoreBackend for a
 * native semaphore's permit. The watchdog batches renewals per holder.
 */
export interface LeaseHolder {
  renew(locks: readonly BackendLock[]): Promise<boolean[]>;
  release(lock: BackendLock): Promise<void>;
}

/** How a lease makes its backend calls: the engine's budget and failure reporting around `op`. */
export type LeaseCall = <T>(op: Promise<T>, what: string, lease: LockLease) => Promise<T>;

export interface LockLeaseOptions {
  /** The key as the caller gave it (errors show it)... */
  readonly key: string;
  /** ...and as the backend stores it (prefix included). */
  readonly fullKey: string;
  readonly owner: string;
  readonly mode: LockMode;
  readonly ttl: number;
  readonly fencingToken: bigint;
  readonly backend: LockBackend;
  /** Renews and releases the grant; default: the backend. */
  readonly holder?: LeaseHolder;
  /** The name the backend is registered under. */
  readonly backendName: string;
  /** performance.now() when the granting request was sent. */
  readonly grantedAt: number;
  /** ms from grantedAt the grant is valid for (drift already deducted). */
  readonly validity: number;
  readonly maxHold: number | undefined;
  /** ms from grantedAt the lock must stay held even when released earlier (lockAtLeastFor). */
  readonly minHold?: number;
  /** Called once when the lease is released or lost. */
  readonly onEnd: (lease: LockLease) => void;
  /**
   * Runs a function outside every caller's async context (the engine's ReentrancyScopes.detached):
   * loss listeners and backend calls then never run "as" whichever request happened to trigger
   * them.
   */
  readonly detached?: <T>(fn: () => T) => T;
}

/**
 * One grant from a backend, shared by every re-entrant handle of it. Internal: users see
 * LockHandle. Times are performance.now() (monotonic): a wall-clock jump can never make us believe
 * we hold a lock longer than we do.
 */
export class LockLease implements BackendLock {
  state: LeaseState = 'held';
  /** Re-entrant holds; the backend lock is released when this drops to zero. */
  holds = 1;
  /**
   * Local, conservative end of validity: no renewal confirmed after this means we cannot know we
   * hold it.
   */
  validUntil: number;
  nextRenewAt: number;
  /** No renewals after this time (maxHold). */
  readonly renewUntil: number;
  /** A release before this time leaves the lock to expire then instead (minHold). */
  readonly holdUntil: number;
  renewing = false;
  /** Made on first use: most locks are released without anyone reading their signal. */
  private controller?: AbortController;
  /** Internal loss callbacks (see onLoss): cheaper than a listener on the signal. */
  /** Who learns of a loss (see onLoss): one watcher, or a Set once there are more. */
  private lossWatchers?: (() => void) | Set<() => void>;
  private releasing?: Promise<void>;

  readonly key: string;
  readonly fullKey: string;
  readonly owner: string;
  readonly mode: LockMode;
  ttl: number;
  readonly fencingToken: bigint;
  readonly backend: LockBackend;
  readonly holder: LeaseHolder;
  readonly backendName: string;
  private readonly onEnd: (lease: LockLease) => void;
  private readonly detached: <T>(fn: () => T) => T;

  constructor(o: LockLeaseOptions) {
    this.detached = o.detached ?? ((fn) => fn());
    this.key = o.key;
    this.fullKey = o.fullKey;
    this.owner = o.owner;
    this.mode = o.mode;
    this.ttl = o.ttl;
    this.fencingToken = o.fencingToken;
    this.backend = o.backend;
    this.holder = o.holder ?? o.backend;
    this.backendName = o.backendName;
    this.onEnd = o.onEnd;
    this.validUntil = o.grantedAt + o.validity;
    this.nextRenewAt = o.grantedAt + o.ttl / 3;
    this.renewUntil = o.maxHold === undefined ? Infinity : o.grantedAt + o.maxHold;
    this.holdUntil = o.minHold === undefined ? -Infinity : o.grantedAt + o.minHold;
  }

  /** The BackendLock view the backend sees (its key is the full key). */
  get lock(): BackendLock {
    return { key: this.fullKey, owner: this.owner, mode: this.mode, ttl: this.ttl };
  }

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  /** Marks the lease confirmed at `startedAt` (when the renewal/extend request was sent). */
  confirmed(startedAt: number, ttl: number): void {
    this.validUntil = Math.max(this.validUntil, startedAt + safeValidity(ttl));
    this.nextRenewAt = startedAt + ttl / 3;
  }

  /**
   * Declares the lease lost if its validity has ended, synchronously. Handles call it on every
   * read, so a holder that resumes after a pause (SIGSTOP, a long GC) sees the loss before its code
   * can write, even if the watchdog's timer has not fired yet.
   */
  checkExpiry(now = performance.now()): void {
    if (this.state === 'held' && this.validUntil <= now) {
      this.lose(
        'its validity ended without a confirmed renewal (the process was paused or the backend was slow)',
      );
    }
  }

  /** Lost: abort the signal with LockLostError. Idempotent; a released lease cannot be lost. */
  lose(reason: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.onEnd(this);
    // Listeners run outside the context of whoever noticed the loss (a watchdog tick, another
    // request reading a handle, a backend session callback), so they cannot re-enter its locks.
    const error = new LockLostError(this.key, reason, cause);
    const controller = (this.controller ??= new AbortController());
    const watchers = this.lossWatchers;
    this.lossWatchers = undefined;
    this.detached(() => {
      controller.abort(error);
      if (typeof watchers === 'function') watchers();
      else if (watchers) for (const watch of watchers) watch();
    });
  }

  /**
   * Calls `watch` once when the lease is lost (after its signal aborted; at once, in a microtask,
   * if it already was); returns the function that stops watching. What the engine uses to fail a
   * locked call at once: no AbortController and no event listener per call.
   */
  onLoss(watch: () => void): () => void {
    if (this.state === 'lost') {
      queueMicrotask(watch);
      return noop;
    }
    const watchers = this.lossWatchers;
    if (watchers === undefined) this.lossWatchers = watch;
    else if (typeof watchers === 'function') this.lossWatchers = new Set([watchers, watch]);
    else watchers.add(watch);
    return () => this.unwatch(watch);
  }

  private unwatch(watch: () => void): void {
    const watchers = this.lossWatchers;
    if (watchers === watch) this.lossWatchers = undefined;
    else if (typeof watchers === 'object') watchers.delete(watch);
  }

  get lostError(): LockLostError | undefined {
    return this.state === 'lost' ? (this.signal.reason as LockLostError) : undefined;
  }

  /**
   * Releases on the backend once; concurrent and later calls share the first call's promise.
   * Before holdUntil (minHold) the lock is not deleted: one renewal sets its server-side expiry to
   * holdUntil (session backends: a timer releases it then), so it frees on its own at that time.
   */
  release(call: LeaseCall): Promise<void> {
    // Without minHold (holdUntil -Infinity) there is nothing to linger for, and no clock to read.
    const linger =
      this.state === 'held' && this.holdUntil !== -Infinity
        ? Math.ceil(this.holdUntil - performance.now())
        : 0;
    if (linger > 0 && !this.releasing) {
      this.state = 'released';
      this.onEnd(this);
      this.releasing = this.linger(call, linger);
      return this.releasing;
    }
    if (this.releasing) return this.releasing;
    if (this.state === 'lost') {
      // Best effort: if a renewal failed only because the backend was unreachable, the key may
      // still be ours. Its failure is not lost: every caller's `call` reports it (releaseFailed,
      // through LockActivity.leaseReleaseFailed, and retries it while the ttl lasts) before this
      // catch; the lock is already lost and reported as such.
      this.releasing = call(this.backendRelease(), 'release', this).catch(() => undefined);
      return this.releasing;
    }
    this.state = 'released';
    // The request leaves first; the engine forgets the lease while it travels (synchronously:
    // no watchdog tick or inspect can run in between).
    const op = this.backendRelease();
    this.onEnd(this);
    this.releasing = call(op, 'release', this);
    return this.releasing;
  }

  /**
   * The backend's release, outside every caller's context; a synchronous throw becomes a rejection.
   * Also what a background retry sends (ReleaseRetries): owner-checked, so safe to repeat.
   */
  backendRelease(): Promise<void> {
    try {
      return this.detached(() => this.holder.release(this.lock));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * minHold: keep the lock, unrenewed, for `ms` more. TTL backends: renew once with ttl = ms, so
   * the server drops it at holdUntil even if this process dies now. Session backends (the lock
   * lives as long as the session): release from a timer at holdUntil (unref'd; a process that
   * exits frees it with its session). If the renewal finds it gone there is nothing to keep.
   */
  private async linger(call: LeaseCall, ms: number): Promise<void> {
    if (!this.backend.capabilities.sessionBased) {
      await call(this.holder.renew([{ ...this.lock, ttl: ms }]), 'release', this);
      return;
    }
    const timer = setTimeout(() => {
      // Never throw from a timer; `call` (the engine's, with LockActivity.leaseReleaseFailed) has
      // already emitted releaseFailed when this rejects.
      call(this.holder.release(this.lock), 'release', this).catch(() => undefined);
    }, ms);
    timer.unref?.();
  }
}

const noop = (): void => undefined;

export { safeValidity };
