import type { LockMode } from '../interfaces/lock-backend.interface';
import type { LockEventBus } from './lock-events';
import type { LockLease } from './lock-lease';

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
}

/**
 * What the engine tracks for operators, beside the locks themselves: acquires in flight per key
 * (waiters), when each lease was granted (hold times), and which backends are in an outage (so
 * backendUnavailable/backendRecovered fire once per transition, not once per failed call). Pure
 * bookkeeping, O(1) per call: it never decides anything about a lock.
 */
export class LockActivity {
  private readonly inFlight = new Map<string, { key: string; backend: string; n: number }>();
  private readonly grantedAt = new WeakMap<LockLease, { at: number; template?: string }>();
  /** Backend name -> performance.now() when its outage was first seen. */
  private readonly down = new Map<string, number>();

  constructor(private readonly events: LockEventBus) {}

  /** Counts an acquire in; returns how many acquires of the same key were already in flight. */
  enter(backend: string, key: string): number {
    const id = `${backend}\u0000${key}`;
    const entry = this.inFlight.get(id);
    if (entry) return entry.n++;
    this.inFlight.set(id, { key, backend, n: 1 });
    return 0;
  }

  leave(backend: string, key: string): void {
    const id = `${backend}\u0000${key}`;
    const entry = this.inFlight.get(id);
    if (entry && --entry.n === 0) this.inFlight.delete(id);
  }

  /** Acquires in flight (all keys) for one backend, or for all. */
  waiting(backend?: string): number {
    let n = 0;
    for (const e of this.inFlight.values()) if (backend === undefined || e.backend === backend) n += e.n;
    return n;
  }

  waitingFor(backend: string, key: string): number {
    return this.inFlight.get(`${backend}\u0000${key}`)?.n ?? 0;
  }

  waitingLocks(): WaitingLockInfo[] {
    return [...this.inFlight.values()].map(({ key, backend, n }) => ({ key, backend, waiters: n }));
  }

  granted(lease: LockLease, template?: string): void {
    this.grantedAt.set(lease, { at: performance.now(), template });
  }

  heldMs(lease: LockLease, now = performance.now()): number {
    const grant = this.grantedAt.get(lease);
    return grant === undefined ? 0 : now - grant.at;
  }

  /** The @Locked key template the lease was taken with, if any. */
  template(lease: LockLease): string | undefined {
    return this.grantedAt.get(lease)?.template;
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

  /** A backend call failed: the first failure of an outage emits backendUnavailable. */
  failed(backend: string, operation: string, error: unknown): void {
    if ((error as { code?: unknown })?.code !== 'LOCK_BACKEND_UNAVAILABLE' || this.down.has(backend)) return;
    this.down.set(backend, performance.now());
    if (this.events.active) this.events.emit({ type: 'backendUnavailable', at: Date.now(), backend, operation, error });
  }

  /** A backend call answered: ends an outage (backendRecovered). */
  answered(backend: string): void {
    if (this.down.size === 0) return;
    const since = this.down.get(backend);
    if (since === undefined) return;
    this.down.delete(backend);
    if (this.events.active) this.events.emit({ type: 'backendRecovered', at: Date.now(), backend, downMs: Math.round(performance.now() - since) });
  }

  isDown(backend: string): boolean {
    return this.down.has(backend);
  }
}
