import { LockLostError } from '../../errors/lock-lost.error';
import { LockNotHeldError } from '../../errors/lock-not-held.error';
import type { LockMode } from '../../interfaces/lock-backend.interface';
import { checkDuration } from '../keys/lock-options';
import { MIN_TTL_MS } from '../../distributed-lock.constants';
import type { LeaseState } from './lock-lease';
import { raceAbort } from '../../backend-kit/wait-loop';

/** What release() answers once this handle has already released. */
const RELEASED: Promise<void> = Promise.resolve();

/**
 * Rejects with the signal's reason (LockLostError) as soon as it aborts, else settles like `work`.
 */
export function raceLost<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return raceAbort(work, signal, () => {
    throw signal.reason;
  });
}

/** What a handle reads of its grant: one LockLease, or a multi-key CompositeLease. */
export interface HandleLease {
  readonly key: string;
  /** Every key of a multi-key grant (canonical order); absent = [key]. */
  readonly keys?: readonly string[];
  readonly mode: LockMode;
  readonly fencingToken: bigint;
  /** A token per key of a multi-key grant; absent = { key: fencingToken }. */
  readonly fencingTokens?: ReadonlyMap<string, bigint>;
  readonly owner: string;
  readonly signal: AbortSignal;
  readonly state: LeaseState;
  readonly lostError: LockLostError | undefined;
  readonly ttl: number;
  checkExpiry(): void;
  /** Calls `watch` once when the lease is lost; returns the function that stops watching. */
  onLoss?(watch: () => void): () => void;
}

export interface LeaseOps<L extends HandleLease = HandleLease> {
  extend(lease: L, ttl: number): Promise<void>;
  release(lease: L): Promise<void>;
}

/**
 * What a holder sees: one per acquire (re-entrant acquires get their own handle over the same
 * lease, with the same fencing token and signal). release() is idempotent per handle.
 */
export class LockHandle {
  private released = false;

  /** @internal */
  constructor(
    private readonly lease: HandleLease,
    private readonly ops: LeaseOps,
  ) {}

  /**
   * The resolved key, without the module's keyPrefix (a multi-key grant: its first key in canonical
   * order).
   */
  get key(): string {
    return this.lease.key;
  }

  /** Every key this handle holds (one, or all keys of a multi-key grant in canonical order). */
  get keys(): readonly string[] {
    return this.lease.keys ?? [this.lease.key];
  }

  /** The fencing token of each key (a multi-key grant has one per key). */
  get fencingTokens(): ReadonlyMap<string, bigint> {
    return this.lease.fencingTokens ?? new Map([[this.lease.key, this.lease.fencingToken]]);
  }

  get mode(): LockMode {
    return this.lease.mode;
  }

  /**
   * Larger for every new exclusive grant of this key; send it with every write the lock protects.
   * A multi-key grant: the first key's token (see fencingTokens for each key's).
   */
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
   * @internal Settles like `work`, or rejects with the LockLostError as soon as the lock is lost
   * (withLock and @Locked). Over a lease that reports losses itself, no AbortSignal is made.
   */
  raceLost<T>(work: Promise<T>): Promise<T> {
    const lease = this.lease;
    if (typeof lease.onLoss !== 'function') return raceLost(work, this.signal);
    this.throwIfLost();
    return new Promise<T>((resolve, reject) => {
      const stop = lease.onLoss!(() => reject(lease.lostError));
      work.then(
        (value) => {
          stop();
          resolve(value);
        },
        (error) => {
          stop();
          reject(error);
        },
      );
    });
  }

  /**
   * Extends the lock to `ttl` ms from now (default: its current ttl) and keeps that ttl for later
   * renewals. Throws LockNotHeldError after release, LockLostError if the lock is gone.
   */
  async extend(ttl?: number): Promise<void> {
    const next =
      ttl === undefined ? this.lease.ttl : checkDuration('ttl', ttl, MIN_TTL_MS, this.key);
    if (this.released || this.lease.state === 'released')
      throw new LockNotHeldError(this.key, 'extend');
    this.throwIfLost();
    await this.ops.extend(this.lease, next);
  }

  /**
   * Releases this hold; the lock itself is released when the last re-entrant hold is. Idempotent.
   */
  release(): Promise<void> {
    if (this.released) return RELEASED;
    this.released = true;
    // No async layer of its own: ops.release never throws synchronously (it returns the backend
    // call's promise, a rejected one included).
    return this.ops.release(this.lease);
  }

  /**
   * `await using lock = await locks.acquire(key)` releases at the end of the block, thrown or not
   * (TypeScript 5.2+): the same as `await lock.release()` in a `finally`.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
