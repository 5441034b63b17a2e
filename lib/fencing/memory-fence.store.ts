import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { FenceStore } from './fence-store.interface';
import { staleReporter, type FenceObserverOptions } from './fencing-events';
import {
  accepted,
  refused,
  toFencingGrant,
  type FencedRefused,
  type FencedResult,
  type FencingTokenLike,
} from './fencing-token';

/** How many resources a MemoryFenceStore remembers by default (see `maxResources`). */
export const DEFAULT_MEMORY_FENCE_RESOURCES = 100_000;

export interface MemoryFenceStoreOptions extends FenceObserverOptions {
  /**
   * The most resources remembered; past it the least recently written is forgotten (a holder of
   * that resource paused since then could write once more). Bounds what callers of a `@Fenced`
   * handler, who choose the keys, can make this process keep. Default 100,000.
   */
  maxResources?: number;
}

/**
 * The fence in this process's memory: for one service instance, tests, or a resource that lives
 * in the process itself. It forgets everything on restart, so a downstream service with several
 * instances (or restarts) needs RedisFencedStore, PostgresFencedStore or MySqlFencedStore.
 */
export class MemoryFenceStore implements FenceStore {
  /** resource -> highest token and the grant that wrote it; Map order = least recently written. */
  private readonly records = new Map<string, { token: bigint; grant: string }>();
  private readonly report: (refusal: FencedRefused) => void;
  private readonly maxResources: number;

  constructor(options: MemoryFenceStoreOptions = {}) {
    const max = options.maxResources ?? DEFAULT_MEMORY_FENCE_RESOURCES;
    if (!Number.isSafeInteger(max) || max < 1)
      throw new InvalidLockOptionsError('maxResources', max, 'a positive integer');
    this.maxResources = max;
    this.report = staleReporter('memory', options);
  }

  async advance(resource: string, token: FencingTokenLike): Promise<FencedResult<void>> {
    return this.write(resource, token, () => undefined);
  }

  /**
   * Runs `fn` only when `token` is current for `resource` (synchronously, so nothing interleaves):
   * higher than the highest recorded, or equal to it and from the grant that wrote it.
   */
  write<T>(resource: string, token: FencingTokenLike, fn: () => T): FencedResult<T> {
    const { token: t, grant } = toFencingGrant(token);
    const record = this.records.get(resource);
    if (record && (t < record.token || (t === record.token && grant !== record.grant))) {
      const refusal = refused(resource, t, record.token);
      this.report(refusal);
      return refusal;
    }
    this.records.delete(resource);
    this.records.set(resource, { token: t, grant });
    if (this.records.size > this.maxResources)
      this.records.delete(this.records.keys().next().value as string);
    return accepted(resource, t, fn());
  }

  highest(resource: string): bigint | undefined {
    return this.records.get(resource)?.token;
  }

  /**
   * Forgets `resource`'s fence (an operator's reset, e.g. after a forged token shut its holders
   * out); the next write of any token is accepted. True when there was one.
   */
  async reset(resource: string): Promise<boolean> {
    return this.records.delete(resource);
  }
}
