import { LockLostError } from '../errors/lock-lost.error';
import type { BackendLock, LockBackend, LockMode } from '../interfaces/lock-backend.interface';

export type LeaseState = 'held' | 'released' | 'lost';

/**
 * One grant from a backend, shared by every re-entrant handle of it. Internal: users see LockHandle.
 * Times are performance.now() (monotonic): a wall-clock jump can never make us believe we hold a
 * lock longer than we do.
 */
export class LockLease implements BackendLock {
  state: LeaseState = 'held';
  /** Re-entrant holds; the backend lock is released when this drops to zero. */
  holds = 1;
  /** Local, conservative end of validity: no renewal confirmed after this means we cannot know we hold it. */
  validUntil: number;
  nextRenewAt: number;
  /** No renewals after this time (maxHold). */
  readonly renewUntil: number;
  renewing = false;
  readonly controller = new AbortController();
  private releasing?: Promise<void>;

  constructor(
    readonly key: string,
    readonly fullKey: string,
    readonly owner: string,
    readonly mode: LockMode,
    public ttl: number,
    readonly fencingToken: bigint,
    readonly backend: LockBackend,
    readonly backendName: string,
    grantedAt: number,
    validity: number,
    maxHold: number | undefined,
    private readonly onEnd: (lease: LockLease) => void,
  ) {
    this.validUntil = grantedAt + validity;
    this.nextRenewAt = grantedAt + ttl / 3;
    this.renewUntil = maxHold === undefined ? Infinity : grantedAt + maxHold;
  }

  /** The BackendLock view the backend sees (its key is the full key). */
  get lock(): BackendLock {
    return { key: this.fullKey, owner: this.owner, mode: this.mode, ttl: this.ttl };
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Marks the lease confirmed at `startedAt` (when the renewal/extend request was sent). */
  confirmed(startedAt: number, ttl: number): void {
    this.validUntil = Math.max(this.validUntil, startedAt + safeValidity(ttl));
    this.nextRenewAt = startedAt + ttl / 3;
  }

  /**
   * Declares the lease lost if its validity has ended, synchronously. Handles call it on every read,
   * so a holder that resumes after a pause (SIGSTOP, a long GC) sees the loss before its code can
   * write, even if the watchdog's timer has not fired yet.
   */
  checkExpiry(now = performance.now()): void {
    if (this.state === 'held' && this.validUntil <= now) {
      this.lose('its validity ended without a confirmed renewal (the process was paused or the backend was slow)');
    }
  }

  /** Lost: abort the signal with LockLostError. Idempotent; a released lease cannot be lost. */
  lose(reason: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.onEnd(this);
    this.controller.abort(new LockLostError(this.key, reason, cause));
  }

  get lostError(): LockLostError | undefined {
    return this.state === 'lost' ? (this.signal.reason as LockLostError) : undefined;
  }

  /** Releases on the backend once; concurrent and later calls share the first call's promise. */
  release(call: <T>(op: Promise<T>, what: string) => Promise<T>): Promise<void> {
    if (this.releasing) return this.releasing;
    if (this.state === 'lost') {
      // Best effort: if a renewal failed only because the backend was unreachable, the key may still be ours.
      this.releasing = call(this.backend.release(this.lock), 'release').catch(() => undefined);
      return this.releasing;
    }
    this.state = 'released';
    this.onEnd(this);
    this.releasing = call(this.backend.release(this.lock), 'release');
    return this.releasing;
  }
}

/** Validity we count on for a grant of `ttl`: minus a clock-drift margin (1 % + 2 ms, as Redlock). */
export function safeValidity(ttl: number): number {
  return ttl - Math.ceil(ttl * 0.01) - 2;
}
