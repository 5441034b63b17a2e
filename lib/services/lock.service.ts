import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { LockEngine } from '../core/lock-engine';
import type { LockHandle } from '../core/lease/lock-handle';
import type { LockKeys } from '../core/keys/key-list';
import type { CampaignOptions, Leadership } from '../recipes/election';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { holdTimes } from '../core/activity/hold-times';
import { requestSignalOf } from '../interceptors/request-signal';
import type { AcquireMeta } from '../core/recipe-host';
import { Observable } from 'rxjs';
import type { LockEvent } from '../core/activity/lock-events';
import type { HeldLockInfo, WaitingLockInfo } from '../core/activity/lock-activity';
import type { BackendProbeResult, LockInspectionReport } from '../core/activity/lock-operations';

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
    return this.engine.acquire(key, options, requestBound());
  }

  /**
   * Tries once, never waiting (whatever the defaults): the handle, or null when the lock is busy.
   */
  tryAcquire(key: LockKeys, options?: LockOptions): Promise<LockHandle | null> {
    return this.engine.tryAcquire(key, options);
  }

  /**
   * Runs fn holding the lock: renewed while it runs, released after; rejects at once if the lock is
   * lost.
   */
  withLock<T>(
    key: LockKeys,
    fn: (handle: LockHandle) => T | Promise<T>,
    options?: LockOptions,
  ): Promise<T> {
    return this.engine.withLock(
      key,
      async (handle) => {
        const started = performance.now();
        try {
          return await fn(handle);
        } finally {
          for (const k of typeof key === 'string' ? [key] : key)
            holdTimes.record(k, performance.now() - started);
        }
      },
      options,
      requestBound(),
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

  /**
   * Every lock event of this module (acquired, busy, skipped, acquireFailed, released, lost,
   * renewFailed, releaseFailed, backendUnavailable, backendRecovered, forceReleased), delivered
   * synchronously; unsubscribe to stop.
   */
  readonly events: Observable<LockEvent> = new Observable<LockEvent>((subscriber) =>
    this.engine.events.on((e) => subscriber.next(e)),
  );

  /**
   * Who holds `key` (owner, mode, remaining ttl, last fencing token, waiters where the backend
   * knows) plus this process's own holds and waiters of it. InvalidLockOptionsError names the
   * backend when it has no inspect().
   */
  inspect(key: string, options?: { backend?: string }): Promise<LockInspectionReport> {
    return this.engine.operator.inspect(key, options?.backend);
  }

  /**
   * Operator action: frees `key` whoever holds it (logged and emitted as 'forceReleased'); the old
   * holder's handle signals loss at its next renewal. Resolves true when it was held.
   */
  forceRelease(key: string, options?: { backend?: string }): Promise<boolean> {
    return this.engine.operator.forceRelease(key, options?.backend);
  }

  /**
   * Held keys under `prefix` (without the module's keyPrefix), on backends that can list. When the
   * backend's own bound cut its walk short (Redis/Redlock SCAN past its time budget) held keys may
   * be missing, and the array carries `partial: true`.
   */
  list(
    prefix = '',
    options?: { backend?: string; limit?: number },
  ): Promise<string[] & { readonly partial?: boolean }> {
    return this.engine.operator.list(prefix, options?.backend, options?.limit);
  }

  /** Locks held by this process now, and acquires in flight per key. */
  heldLocks(): HeldLockInfo[] {
    return this.engine.operator.heldLocks();
  }

  waitingLocks(): WaitingLockInfo[] {
    return this.engine.operator.waitingLocks();
  }

  /** One real round trip to every backend; 'down' results carry the reason. */
  checkBackends(): Promise<BackendProbeResult[]> {
    return this.engine.operator.probe();
  }

  /** Releases every held lock (their signals abort) and stops every timer. */
  async onApplicationShutdown(): Promise<void> {
    await this.engine.close();
  }
}

/** Inside a request, a wait also ends when the client goes away (the module's middleware). */
function requestBound(): AcquireMeta | undefined {
  const requestSignal = requestSignalOf();
  return requestSignal && { requestSignal };
}
