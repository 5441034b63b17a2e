import type { FenceStore } from './fence-store.interface';
import { staleReporter, type FenceObserverOptions } from './fencing-events';
import {
  accepted,
  refused,
  toFencingToken,
  type FencedRefused,
  type FencedResult,
  type FencingTokenLike,
} from './fencing-token';

/**
 * The fence in this process's memory: for one service instance, tests, or a resource that lives
 * in the process itself. It forgets everything on restart, so a downstream service with several
 * instances (or restarts) needs RedisFencedStore, PostgresFencedStore or MySqlFencedStore.
 */
export class MemoryFenceStore implements FenceStore {
  private readonly highestOf = new Map<string, bigint>();
  private readonly report: (refusal: FencedRefused) => void;

  constructor(options: FenceObserverOptions = {}) {
    this.report = staleReporter('memory', options);
  }

  async advance(resource: string, token: FencingTokenLike): Promise<FencedResult<void>> {
    return this.write(resource, token, () => undefined);
  }

  /**
   * Runs `fn` only when `token` is current for `resource` (synchronously, so nothing interleaves).
   */
  write<T>(resource: string, token: FencingTokenLike, fn: () => T): FencedResult<T> {
    const t = toFencingToken(token);
    const highest = this.highestOf.get(resource);
    if (highest !== undefined && t < highest) {
      const refusal = refused(resource, t, highest);
      this.report(refusal);
      return refusal;
    }
    this.highestOf.set(resource, t);
    return accepted(resource, t, fn());
  }

  highest(resource: string): bigint | undefined {
    return this.highestOf.get(resource);
  }
}
