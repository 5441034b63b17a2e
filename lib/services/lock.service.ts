import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { LockEngine } from '../core/lock-engine';
import type { LockHandle } from '../core/lock-handle';
import type { LockKeys } from '../core/multi-lock';
import type { CampaignOptions, Leadership } from '../core/leader-election';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { holdTimes } from '../core/hold-times';
import { withRequestSignal } from '../interceptors/request-signal';

/**
 * The injectable face of the lock engine: acquire / tryAcquire / withLock. Keys are used as given
 * (the module's keyPrefix is prepended); encode request values with encodeKeyPart(). Inside an
 * HTTP request, a wait also ends when the client goes away; withLock's hold times feed the
 * Retry-After estimate.
 */
@Injectable()
export class LockService implements OnApplicationShutdown {
  constructor(@Inject(LockEngine) readonly engine: LockEngine) {}

  /**
   * Acquires the lock (or every key of an array: all or nothing, in canonical order, one handle),
   * waiting up to `wait` ms; LockAcquireTimeoutError when still busy.
   */
  acquire(key: LockKeys, options?: LockOptions): Promise<LockHandle> {
    return this.engine.acquire(key, requestBound(options));
  }

  /** Tries once, never waiting (whatever the defaults): the handle, or null when the lock is busy. */
  tryAcquire(key: LockKeys, options?: LockOptions): Promise<LockHandle | null> {
    return this.engine.tryAcquire(key, options);
  }

  /** Runs fn holding the lock: renewed while it runs, released after; rejects at once if the lock is lost. */
  withLock<T>(key: LockKeys, fn: (handle: LockHandle) => T | Promise<T>, options?: LockOptions): Promise<T> {
    return this.engine.withLock(
      key,
      async (handle) => {
        const started = performance.now();
        try {
          return await fn(handle);
        } finally {
          for (const k of typeof key === 'string' ? [key] : key) holdTimes.record(k, performance.now() - started);
        }
      },
      requestBound(options),
    );
  }

  /**
   * Campaigns for leadership of `name` (one campaign per name and module, shared by every caller):
   * `isLeader`, `term` (fencing token and a signal that aborts on loss), `onChange`, `whenLeader`,
   * `resign`. Works on every backend.
   */
  campaign(name: string, options?: CampaignOptions): Leadership {
    return this.engine.leadership(name, options);
  }

  /** The handle of a lock held in the current async context (innermost, or by key). */
  current(key?: string, backend?: string): LockHandle | undefined {
    return this.engine.current(key, backend);
  }

  /** Releases every held lock (their signals abort) and stops every timer. */
  async onApplicationShutdown(): Promise<void> {
    await this.engine.close();
  }
}

function requestBound(options: LockOptions | undefined): LockOptions | undefined {
  const signal = withRequestSignal(options?.signal);
  return signal === options?.signal ? options : { ...options, signal };
}
