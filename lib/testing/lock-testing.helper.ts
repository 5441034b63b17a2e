import { Inject, Injectable } from '@nestjs/common';
import { LockEngine } from '../core/lock-engine';
import { reported } from '../core/activity/observe';
import type { LockHandle } from '../core/lease/lock-handle';
import type { LockOptions } from '../interfaces/lock-options.interface';

/**
 * Test helper over the module's engine (provided by DistributedLockModule.forTesting(); for forRoot
 * use `LockTesting.hold(app, key)`). hold() takes a key as another owner would, in a scope of its
 * own, so the code under test finds it busy (409, RpcException...) instead of re-entering it.
 */
@Injectable()
export class LockTestingHelper {
  private readonly handles = new Set<LockHandle>();

  constructor(@Inject(LockEngine) readonly engine: LockEngine) {}

  /**
   * Holds `key` (without the keyPrefix) until the handle or releaseAll() releases it. Tries once.
   */
  async hold(key: string, options: Omit<LockOptions, 'wait'> = {}): Promise<LockHandle> {
    const handle = await this.engine.runInScope(() =>
      this.engine.acquire(key, { ...options, wait: 0 }),
    );
    this.handles.add(handle);
    return handle;
  }

  /** Whether another owner holds `key` right now (probes once, from a scope of its own). */
  async isHeld(key: string, backend?: string): Promise<boolean> {
    const probe = await this.engine.runInScope(() => this.engine.tryAcquire(key, { backend }));
    await probe?.release();
    return probe === null;
  }

  /** Releases every key held through hold(). */
  async releaseAll(): Promise<void> {
    const handles = [...this.handles];
    this.handles.clear();
    // Teardown: a failed release is logged and emitted by the engine ('releaseFailed'), and a
    // test's teardown must free the rest whatever one of them did.
    await Promise.all(handles.map((h) => h.release().catch(reported)));
  }
}
