import type { LockMode } from '../../interfaces/lock-backend.interface';
import type { LockAcquireTimeoutError } from '../../errors/lock-acquire-timeout.error';
import type { LockHandle } from '../lease/lock-handle';
import type { LockEventBus } from './lock-events';
import type { LockLease } from '../lease/lock-lease';
import { SteadyMap, SteadySet } from '../../backend-kit/steady-collections';

/** One lock held through this engine, as the live view and LockService.heldLocks() show it. */
export interface HeldLockInfo {
  readonly key: string;
  readonly backend: string;
  readonly mode: LockMode;
  readonly fencingToken: bigint;
  /** ms since the grant. */
  readonly heldMs: number;
  /** Re-entrant holds. */
  readonly holds: number;
  /** Owner token of the grant. */
  readonly owner: string;
}

/** Acquires of one key in flight in this process (waiting or attempting). */
export interface WaitingLockInfo {
  readonly key: string;
  readonly backend: string;
  readonly waiters: number;
  /** ms the longest waiter of the key has waited so far. */
  readonly oldestMs?: number;
}

/** One observed acquire's end, as observe.ts reports it. */
interface AcquireReport {
  readonly key: string;
  readonly keyTemplate: string | undefined;
  readonly backend: string;
  readonly waitMs: number;
}
export interface AcquiredReport extends AcquireReport {
  readonly requested: LockMode;
  readonly handle: LockHandle | undefined;
  readonly error: unknown;
  readonly record: {
    readonly attempts: number;
    readonly ahead: number;
  };
  readonly outcome: string;
}
export interface FailedReport extends AcquireReport {
  readonly mode: LockMode;
  readonly error: unknown;
}

/** An acquire in flight, as LockActivity counts it (an Acquisition is one). */
export interface InFlightAcquire {
  /** The registered backend name. */
  readonly backendName: string;
  /** The key as the caller gave it. */
  readonly callerKey: string;
  /** performance.now() when the acquire started. */
  readonly startedAt?: number;
  /**
   * Stops the acquire: its wait ends and its caller gets `error`. Settles once an attempt still in
   * flight has answered and a grant it made has been given back (never rejects).
   */
  cancel(error: unknown): Promise<void>;
}

/**
 * What the engine tracks for operators, beside the locks themselves: acquires in flight per key
 * (waiters), when each lease was granted (hold times), and which backends are in an outage (so
 * backendUnavailable/backendRecovered fire once per transition, not once per failed call). Pure
 * bookkeeping, O(1) per acquire and grant (the per-key counts are made when read): it never
 * decides anything about a lock.
 */
export class LockActivity {
  /** Acquires in flight: counts per key are made when asked (operators, observed acquires). */
  private readonly inFlight = new SteadySet<InFlightAcquire>();
  /** Grant time and template of leases taken while someone listened; deleted when they end. */
  private readonly grantedAt = new SteadyMap<LockLease, { at: number; template?: string }>();
  /** Error label ("default (redis)") -> registered name. */
  private readonly names = new Map<string, string>();
  /** Backend name -> performance.now() when its outage was first seen. */
  private readonly down = new Map<string, number>();

  constructor(private readonly events: LockEventBus) {}

  enter(acquire: InFlightAcquire): void {
    this.inFlight.add(acquire);
  }

  leave(acquire: InFlightAcquire): void {
    this.inFlight.delete(acquire);
  }

  /**
   * Stops every acquire in flight (the engine is closing), each with `errorFor(it)`; settles once
   * every late grant among them has been given back (see InFlightAcquire.cancel).
   */
  cancelAll(errorFor: (acquire: InFlightAcquire) => unknown): Promise<void> {
    return Promise.all([...this.inFlight].map((a) => a.cancel(errorFor(a)))).then(() => undefined);
  }

  /** Acquires in flight (all keys) for one backend, or for all. */
  waiting(backend?: string): number {
    let n = 0;
    for (const a of this.inFlight) if (backend === undefined || a.backendName === backend) n++;
    return n;
  }

  waitingFor(backend: string, key: string): number {
    let n = 0;
    for (const a of this.inFlight) if (a.callerKey === key && a.backendName === backend) n++;
    return n;
  }

  /** Keys with acquires in flight, by backend, each with how many. */
  waitingLocks(): WaitingLockInfo[] {
    const counts = new Map<string, Map<string, { waiters: number; since: number }>>();
    const now = performance.now();
    for (const a of this.inFlight) {
      let keys = counts.get(a.backendName);
      if (!keys) counts.set(a.backendName, (keys = new Map()));
      const k = keys.get(a.callerKey) ?? { waiters: 0, since: now };
      k.waiters++;
      k.since = Math.min(k.since, a.startedAt ?? now);
      keys.set(a.callerKey, k);
    }
    return [...counts].flatMap(([backend, keys]) =>
      [...keys].map(([key, k]) => ({
        key,
        backend,
        waiters: k.waiters,
        oldestMs: Math.round(now - k.since),
      })),
    );
  }

  granted(lease: LockLease, template?: string): void {
    this.grantedAt.set(lease, { at: performance.now(), template });
  }

  heldMs(lease: LockLease, now = performance.now()): number {
    const grant = this.grantedAt.get(lease);
    return grant === undefined ? 0 : now - grant.at;
  }

  describe(lease: LockLease, now = performance.now()): HeldLockInfo {
    return {
      key: lease.key,
      backend: lease.backendName,
      mode: lease.mode,
      fencingToken: lease.fencingToken,
      heldMs: Math.round(this.heldMs(lease, now)),
      holds: lease.holds,
      owner: lease.owner,
    };
  }

  /** Emits acquired (a handle) or busy (no handle: timed out or wait: 0), if someone wants it. */
  acquired(a: AcquiredReport): void {
    const { attempts, ahead } = a.record;
    const base = { at: Date.now(), backend: a.backend, key: a.key, keyTemplate: a.keyTemplate };
    if (a.handle) {
      if (!this.events.wants('acquired')) return;
      const { mode, fencingToken } = a.handle;
      const contended = attempts > 1 || ahead > 0;
      const reentrant = attempts === 0;
      this.events.emit({
        type: 'acquired',
        ...base,
        mode,
        fencingToken,
        waitMs: a.waitMs,
        attempts,
        contended,
        reentrant,
      });
    } else if (this.events.wants('busy')) {
      const retryAfter = (a.error as LockAcquireTimeoutError).retryAfter;
      const timedOut = a.outcome === 'timeout';
      this.events.emit({
        type: 'busy',
        ...base,
        mode: a.requested,
        waitMs: a.waitMs,
        attempts,
        timedOut,
        retryAfter,
      });
    }
  }

  acquireFailed(a: FailedReport): void {
    const { key, keyTemplate, backend, mode, waitMs, error } = a;
    this.events.emit({
      type: 'acquireFailed',
      at: Date.now(),
      backend,
      key,
      keyTemplate,
      mode,
      waitMs,
      error,
    });
  }

  /** A lease ended (released or lost): forget its grant, emit released/lost. */
  ended(lease: LockLease): void {
    const grant = this.grantedAt.get(lease);
    if (grant) this.grantedAt.delete(lease);
    const lost = lease.state === 'lost';
    if (!this.events.wants(lost ? 'lost' : 'released')) return;
    const heldMs = grant ? performance.now() - grant.at : 0;
    const base = {
      at: Date.now(),
      backend: lease.backendName,
      key: lease.key,
      keyTemplate: grant?.template,
      mode: lease.mode,
      heldMs,
    };
    if (!lost) return this.events.emit({ type: 'released', ...base });
    // lose() calls onEnd just before it aborts the signal with the LockLostError: read it after.
    queueMicrotask(() => {
      const error = lease.lostError;
      this.events.emit({
        type: 'lost',
        ...base,
        reason: error ? error.message.replace(/^Lock "[\s\S]*" was lost: /, '') : 'lost',
        error,
      });
    });
  }

  renewFailed(backend: string, leases: readonly LockLease[], error: unknown): void {
    if (this.events.active)
      this.events.emit({
        type: 'renewFailed',
        at: Date.now(),
        backend,
        keys: leases.map((l) => l.key),
        error,
      });
  }

  releaseFailed(backend: string, key: string, during: string, error: unknown): void {
    if (this.events.active)
      this.events.emit({ type: 'releaseFailed', at: Date.now(), backend, key, during, error });
  }

  /** A release retried in the background ended (see ReleaseRetries). */
  releaseRetried(
    lease: LockLease,
    end: { attempts: number; outcome: 'released' | 'expired' | 'shutdown'; retryMs: number },
  ): void {
    if (this.events.wants('releaseRetried'))
      this.events.emit({
        type: 'releaseRetried',
        at: Date.now(),
        backend: lease.backendName,
        key: lease.key,
        ...end,
      });
  }

  alias(label: string, name: string): void {
    this.names.set(label, name);
  }

  /**
   * A backend call of `label`'s backend settled (the engine's call() tells it from its own settle
   * callbacks: no extra promise per backend call): a failure may start an outage
   * (backendUnavailable), an answer ends one (backendRecovered). Only while someone listens.
   */
  settled(label: string, operation: string, error?: unknown, failed = error !== undefined): void {
    if (!this.events.active || (!failed && this.down.size === 0)) return;
    const name = this.names.get(label) ?? label;
    if (failed) this.failed(name, operation, error);
    else this.answered(name);
  }

  /** A lease's release failed: releaseFailed, during 'lost-release' if the lease was lost. */
  leaseReleaseFailed(lease: LockLease, error: unknown): void {
    const during = lease.state === 'lost' ? 'lost-release' : 'release';
    this.releaseFailed(lease.backendName, lease.key, during, error);
  }

  /** A backend call failed: the first failure of an outage emits backendUnavailable. */
  failed(backend: string, operation: string, error: unknown, always = false): void {
    if (
      !always &&
      ((error as { code?: unknown })?.code !== 'LOCK_BACKEND_UNAVAILABLE' || this.down.has(backend))
    )
      return;
    if (!always) this.down.set(backend, performance.now());
    if (this.events.active)
      this.events.emit({ type: 'backendUnavailable', at: Date.now(), backend, operation, error });
  }

  /** A backend call answered: ends an outage (backendRecovered). */
  answered(backend: string): void {
    if (this.down.size === 0) return;
    const since = this.down.get(backend);
    if (since === undefined) return;
    this.down.delete(backend);
    if (this.events.active)
      this.events.emit({
        type: 'backendRecovered',
        at: Date.now(),
        backend,
        downMs: Math.round(performance.now() - since),
      });
  }

  isDown(backend: string): boolean {
    return this.down.has(backend);
  }
}
