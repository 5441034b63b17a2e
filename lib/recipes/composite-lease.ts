/**
 * One grant made of several handles (a multi-key grant's keys, a semaphore of permit locks's
 * permit), seen by its holder as one handle: one signal that aborts when any part is lost, one
 * release.
 */
import { LockHandle, type HandleLease, type LeaseOps } from '../core/lease/lock-handle';
import type { LeaseState } from '../core/lease/lock-lease';
import type { LockLostError } from '../errors/lock-lost.error';
import type { LockMode } from '../interfaces/lock-backend.interface';

/**
 * One grant made of the handles of its keys (canonical order). `names` are the keys the holder
 * sees, one per leading part (a semaphore's permit is shown under the semaphore's key); parts past
 * them (a semaphore of permit locks's permits record) are held, renewed and released with the grant
 * but not shown. Default: each part's own key.
 */
export class CompositeLease implements HandleLease {
  released = false;
  private readonly controller = new AbortController();
  private readonly names: readonly string[];

  constructor(
    readonly parts: readonly LockHandle[],
    public ttl: number,
    names?: readonly string[],
  ) {
    this.names = names ?? parts.map((p) => p.key);
    for (const part of parts) {
      const lost = () => this.controller.abort(part.signal.reason);
      if (part.signal.aborted) lost();
      else part.signal.addEventListener('abort', lost, { once: true });
    }
  }

  get key(): string {
    return this.names[0];
  }

  get keys(): readonly string[] {
    return this.names;
  }

  get mode(): LockMode {
    return this.parts[0].mode;
  }

  get fencingToken(): bigint {
    return this.parts[0].fencingToken;
  }

  get fencingTokens(): ReadonlyMap<string, bigint> {
    return new Map(this.names.map((name, i) => [name, this.parts[i].fencingToken]));
  }

  get owner(): string {
    return this.parts[0].owner;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get state(): LeaseState {
    if (this.controller.signal.aborted) return 'lost';
    return this.released ? 'released' : 'held';
  }

  get lostError(): LockLostError | undefined {
    return this.state === 'lost' ? (this.controller.signal.reason as LockLostError) : undefined;
  }

  /**
   * Reading each part's `held` runs its synchronous expiry check; a lapsed part aborts this signal.
   */
  checkExpiry(): void {
    for (const part of this.parts) void part.held;
  }
}

export const COMPOSITE_OPS: LeaseOps<CompositeLease> = {
  async extend(lease, ttl) {
    await Promise.all(lease.parts.map((p) => p.extend(ttl)));
    lease.ttl = ttl;
  },
  async release(lease) {
    lease.released = true;
    const results = await Promise.allSettled(lease.parts.map((p) => p.release()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  },
};

/** The holder's handle over a composite lease. */
export function compositeHandle(lease: CompositeLease): LockHandle {
  return new LockHandle(lease, COMPOSITE_OPS);
}
