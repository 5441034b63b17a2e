import { LockLostError } from '../errors/lock-lost.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import type { LockMode } from '../interfaces/lock-backend.interface';
import { checkDuration } from './lock-options';
import { MIN_TTL_MS } from '../distributed-lock.constants';
import type { LockLease } from './lock-lease';

export interface LeaseOps {
  extend(lease: LockLease, ttl: number): Promise<void>;
  release(lease: LockLease): Promise<void>;
}

/**
 * What a holder sees: one per acquire (re-entrant acquires get their own handle over the same lease,
 * with the same fencing token and signal). release() is idempotent per handle.
 */
export class LockHandle {
  private released = false;

  /** @internal */
  constructor(
    private readonly lease: LockLease,
    private readonly ops: LeaseOps,
  ) {}

  /** The resolved key, without the module's keyPrefix. */
  get key(): string {
    return this.lease.key;
  }

  get mode(): LockMode {
    return this.lease.mode;
  }

  /** Larger for every new exclusive grant of this key; send it with every write the lock protects. */
  get fencingToken(): bigint {
    return this.lease.fencingToken;
  }

  /** Aborted with a LockLostError reason when the lock is lost. Not aborted by a normal release. */
  get signal(): AbortSignal {
    this.lease.checkExpiry();
    return this.lease.signal;
  }

  /** true while this handle holds the lock (not released, not lost). */
  get held(): boolean {
    this.lease.checkExpiry();
    return !this.released && this.lease.state === 'held';
  }

  /** Owner token of the grant (128-bit random, hex); shared by re-entrant handles. */
  get owner(): string {
    return this.lease.owner;
  }

  /** Throws the LockLostError if the lock was lost: call it before a write the lock protects. */
  throwIfLost(): void {
    this.lease.checkExpiry();
    if (this.lease.state === 'lost') throw this.lease.lostError as LockLostError;
  }

  /**
   * Extends the lock to `ttl` ms from now (default: its current ttl) and keeps that ttl for later
   * renewals. Throws LockNotHeldError after release, LockLostError if the lock is gone.
   */
  async extend(ttl?: number): Promise<void> {
    const next = ttl === undefined ? this.lease.ttl : checkDuration('ttl', ttl, MIN_TTL_MS, this.key);
    if (this.released || this.lease.state === 'released') throw new LockNotHeldError(this.key, 'extend');
    this.throwIfLost();
    await this.ops.extend(this.lease, next);
  }

  /** Releases this hold; the lock itself is released when the last re-entrant hold is. Idempotent. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.ops.release(this.lease);
  }
}
