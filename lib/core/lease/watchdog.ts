import { ContextRoot } from '../acquire/context-root';
import type { LeaseHolder, LockLease } from './lock-lease';
import { SteadySet } from '../../backend-kit/steady-collections';

/** Largest number of locks renewed in one backend call (one pipelined round trip on Redis). */
const MAX_BATCH = 5_000;

/**
 * One per backend, and the engine's record of the leases held on it (heldCount, close() and the
 * operator's list read it): a single timer renews every due lease of that backend in one batched
 * renew() call per holder (the backend, or its SemaphoreBackend for permits) at ttl/3, and declares
 * a lease lost when its validity ends without a confirmed renewal (lock gone, or backend
 * unreachable for too long). Never throws from a timer. Its timer chain runs in the context the
 * watchdog was built in (the engine's), never in the async context of the acquire that happened to
 * arm it: otherwise every renewal, and every loss listener it fires, would run inside that one
 * request's reentrancy scope.
 */
export class Watchdog {
  private readonly leases = new SteadySet<LockLease>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private stopped = false;
  private readonly context = new ContextRoot('nestjs-distributed-lock.watchdog');

  constructor(
    private readonly call: <T>(op: Promise<T>, what: string, budget: number) => Promise<T>,
    private readonly now: () => number = () => performance.now(),
    /** Told when a renewal call fails (backend slow or unreachable); must not throw. */
    private readonly onRenewFailed?: (leases: readonly LockLease[], error: unknown) => void,
  ) {}

  get size(): number {
    return this.leases.size;
  }

  /** The leases it renews: every lease of its backend held through the engine. */
  get held(): Iterable<LockLease> {
    return this.leases;
  }

  add(lease: LockLease): void {
    if (this.stopped) return;
    this.leases.add(lease);
    this.arm(Math.min(lease.nextRenewAt, lease.validUntil));
  }

  /**
   * Forgets a lease. An emptied set keeps its timer armed: it fires once, finds nothing and stops.
   * Disarming here made every uncontended acquire + release pay a setTimeout/clearTimeout pair.
   */
  delete(lease: LockLease): void {
    this.leases.delete(lease);
  }

  stop(): void {
    this.stopped = true;
    this.leases.clear();
    this.disarm();
  }

  private arm(at: number): void {
    if (this.stopped || at >= this.timerAt) return;
    this.disarm();
    this.timerAt = at;
    this.timer = setTimeout(
      () => this.context.runInAsyncScope(() => this.tick()),
      Math.max(0, at - this.now()),
    );
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    try {
      const now = this.now();
      const due: LockLease[] = [];
      let next = Infinity;
      for (const lease of this.leases) {
        if (lease.validUntil <= now) {
          lease.lose(
            lease.renewUntil <= now
              ? 'maxHold reached, renewal stopped and the ttl ran out'
              : 'its ttl ran out before a renewal was confirmed (backend slow or unreachable)',
          );
          continue;
        }
        // Renewing up to ttl/6 early lets leases taken at slightly different times share one batch;
        // after that they stay aligned, so each tick is one backend call.
        if (!lease.renewing && lease.nextRenewAt - lease.ttl / 6 <= now && lease.renewUntil > now)
          due.push(lease);
        else
          next = Math.min(
            next,
            lease.renewing || lease.renewUntil <= now
              ? lease.validUntil
              : Math.min(lease.nextRenewAt, lease.validUntil),
          );
      }
      for (const [holder, leases] of byHolder(due))
        for (let i = 0; i < leases.length; i += MAX_BATCH)
          void this.renew(holder, leases.slice(i, i + MAX_BATCH));
      if (next < Infinity) this.arm(next);
    } catch {
      // A tick must never throw; the next add() re-arms.
    }
  }

  private async renew(holder: LeaseHolder, batch: LockLease[]): Promise<void> {
    const startedAt = this.now();
    for (const lease of batch) lease.renewing = true;
    const budget = Math.max(1, Math.min(...batch.map((l) => l.validUntil)) - startedAt);
    let results: boolean[] | undefined;
    try {
      results = await this.call(holder.renew(batch.map((l) => l.lock)), 'renew', budget);
    } catch (error) {
      results = undefined;
      try {
        this.onRenewFailed?.(batch, error);
      } catch {
        // Reporting must never break renewal.
      }
    }
    const now = this.now();
    let next = Infinity;
    batch.forEach((lease, i) => {
      lease.renewing = false;
      if (lease.state !== 'held') return;
      if (results === undefined) {
        // Unreachable: retry soon; the lease is lost if its validity ends first.
        lease.nextRenewAt = now + Math.min(lease.ttl / 10, 500);
      } else if (results[i]) {
        lease.confirmed(startedAt, lease.ttl);
      } else {
        lease.lose('a renewal found it deleted, expired or owned by another owner');
        return;
      }
      next = Math.min(next, lease.nextRenewAt, lease.validUntil);
    });
    if (next < Infinity) this.arm(next);
  }
}

/** Due leases grouped by what renews them (one batch each). */
function byHolder(leases: readonly LockLease[]): Map<LeaseHolder, LockLease[]> {
  const groups = new Map<LeaseHolder, LockLease[]>();
  for (const lease of leases) {
    const group = groups.get(lease.holder);
    if (group) group.push(lease);
    else groups.set(lease.holder, [lease]);
  }
  return groups;
}
