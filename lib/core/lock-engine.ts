import { safeValidity } from '../backend-kit/validity';
import { DEFAULT_BACKEND_NAME } from '../distributed-lock.constants';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockBackend, LockHolderIdentity } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { acquireSemaphore } from '../recipes/semaphore';
import { acquireAll } from '../recipes/multi-key';
import { Leadership, type CampaignOptions } from '../recipes/election';
import { AcquirePipeline, findBackend } from './acquire/acquire-pipeline';
import { backendLabel, callBackend } from './acquire/backend-call';
import type { AcquireCall, PipelineContext } from './acquire/pipeline-context';
import { ReentrancyScopes } from './acquire/reentrancy';
import { AcquireRunner } from './acquire/waiting';
import { checkListener, LockEventBus } from './activity/lock-events';
import { LockActivity, LockOperator } from './activity/lock-operations';
import { reported, runHeld } from './activity/observe';
import { closeEngine } from './engine-close';
import { validateEngineOptions, type LockEngineOptions } from './keys/engine-options';
import type { LockKeys } from './keys/key-list';
import { resolveLockOptions, type ResolvedDefaults } from './keys/lock-options';
import { LockHandle, type LeaseOps } from './lease/lock-handle';
import type { LockLease } from './lease/lock-lease';
import { callRelease, retryRelease } from './lease/release-call';
import { ReleaseRetries } from './lease/release-retry';
import { Watchdog } from './lease/watchdog';
import type { AcquireMeta, RecipeHost } from './recipe-host';

export type { LockEngineOptions } from './keys/engine-options';

/**
 * The framework-free engine: validates options, resolves keys, runs acquires against a deadline,
 * keeps reentrancy per async context, owns one watchdog per backend, and hands out LockHandles.
 * LockService (the Nest layer) is a thin wrapper over it.
 */
export class LockEngine implements RecipeHost {
  readonly backends: ReadonlyMap<string, LockBackend>;
  readonly keyPrefix: string;
  /** This app as the holder of its grants: host, pid and the `instance` option. */
  readonly holder: LockHolderIdentity;
  readonly defaults: ResolvedDefaults;
  readonly operationTimeout: number;
  private readonly watchdogs = new Map<string, Watchdog>();
  private readonly scopes = new ReentrancyScopes();
  private readonly runner = new AcquireRunner();
  private readonly elections = new Map<string, Leadership>();
  /** Registered backend names, in registration order. */
  readonly backendNames: readonly string[];
  /** What the acquire pipeline reads and updates; `closed` lives there. */
  private readonly ctx: PipelineContext;
  private readonly pipeline: AcquirePipeline;
  // lock events + tracing hooks (Logger, OpenTelemetry subscribe)
  readonly events = new LockEventBus();
  readonly activity = new LockActivity(this.events);
  readonly operator: LockOperator; // inspect, forceRelease, list, probe, heldLocks, waitingLocks
  private readonly ops: LeaseOps<LockLease> = {
    extend: (lease, ttl) => this.extendLease(lease, ttl),
    release: (lease) => this.releaseHold(lease),
  };

  /** Failed releases, retried in the background (see ReleaseRetries). */
  private readonly releaseRetries = new ReleaseRetries({
    activity: this.activity,
    attempt: (lease) => retryRelease(this.ctx, lease),
  });

  constructor(options: LockEngineOptions) {
    const o = validateEngineOptions(options);
    this.backends = o.backends;
    this.backendNames = [...o.backends.keys()];
    this.keyPrefix = o.keyPrefix;
    this.holder = o.holder;
    this.defaults = o.defaults;
    this.operationTimeout = o.operationTimeout;
    this.ctx = {
      backends: this.backends,
      backendNames: this.backendNames,
      keyPrefix: this.keyPrefix,
      holder: this.holder,
      defaults: this.defaults,
      operationTimeout: this.operationTimeout,
      events: this.events,
      activity: this.activity,
      scopes: this.scopes,
      runner: this.runner,
      watchdogs: this.watchdogs,
      ops: this.ops,
      closed: false,
      detached: this.detached,
      forgetLease: this.forgetLease,
      releaseRetries: this.releaseRetries,
    };
    this.pipeline = new AcquirePipeline(this.ctx);
    for (const [name, backend] of this.backends) {
      const minTtl = backend.capabilities.minTtl;
      if (minTtl !== undefined && this.defaults.ttl < minTtl) {
        throw new InvalidLockOptionsError(
          'defaults.ttl',
          this.defaults.ttl,
          `at least ${minTtl} ms for backend "${name}" (${backend.name})`,
        );
      }
      this.watchdogs.set(
        name,
        new Watchdog(
          (op, what, budget) => this.call(op, this.label(name), what, budget),
          undefined,
          (leases, error) => this.activity.renewFailed(name, leases, error),
        ),
      );
      this.activity.alias(this.label(name), name);
    }
    if (options.onEvent !== undefined) this.events.on(checkListener(options.onEvent));
    this.operator = new LockOperator({
      keyPrefix: this.keyPrefix,
      events: this.events,
      activity: this.activity,
      backendNames: this.backendNames,
      backend: (n) => this.backend(n),
      heldLeases: () => [...this.watchdogs.values()].flatMap((w) => [...w.held]),
      call: (op, n, what, key) => this.call(op, this.label(n), what, this.operationTimeout, key),
    });
  }

  /** Validated options for one call; exposed so @Locked can validate at startup. */
  resolveOptions(options: LockOptions | undefined, key?: string) {
    return resolveLockOptions(options, this.defaults, this.backendNames, key);
  }

  backend(name = DEFAULT_BACKEND_NAME): LockBackend {
    return findBackend(this.ctx, name);
  }

  /**
   * Acquires `key` (or every key of an array, all or nothing, in canonical order; or a permit of a
   * semaphore with `permits`), waiting up to `wait` ms. Throws LockAcquireTimeoutError when still
   * busy at the deadline. `meta` tells observation where the call came from (@Locked's template).
   */
  acquire(key: LockKeys, options?: LockOptions, meta?: AcquireMeta): Promise<LockHandle> {
    try {
      if (options?.permits !== undefined) return acquireSemaphore(this, key, options, meta);
      if (Array.isArray(key)) return acquireAll(this, key, options, meta);
      return this.pipeline.acquire({ key: key as string, options, ...meta });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The pipeline's acquire of one key (RecipeHost). */
  acquireOne(call: AcquireCall): Promise<LockHandle> {
    return this.pipeline.acquire(call);
  }

  /** Tries once (never waits, whatever the defaults): the handle, or null when the lock is busy. */
  async tryAcquire(
    key: LockKeys,
    options?: LockOptions,
    meta?: AcquireMeta,
  ): Promise<LockHandle | null> {
    const wait = options?.wait;
    if (wait !== undefined && wait !== 0) {
      throw new InvalidLockOptionsError(
        'wait',
        wait,
        '0 or omitted: tryAcquire tries once (use acquire to wait)',
        String(key),
      );
    }
    try {
      return await this.acquire(key, { ...options, wait: 0 }, meta);
    } catch (error) {
      if (error instanceof LockAcquireTimeoutError) return null;
      throw error;
    }
  }

  /**
   * Runs fn under the lock; renewed while fn runs, released in finally, rejects at once if the lock
   * is lost.
   */
  withLock<T>(
    key: LockKeys,
    fn: (handle: LockHandle) => T | Promise<T>,
    options?: LockOptions,
    meta?: AcquireMeta,
  ): Promise<T> {
    return this.scopes.run(async () => {
      const handle = await this.acquire(key, options, meta);
      try {
        return await handle.raceLost(runHeld(this, handle, options?.backend, () => fn(handle)));
      } finally {
        await handle.release().catch(reported); // already emitted as 'releaseFailed'
      }
    });
  }

  /**
   * Runs fn as an owning call (see ReentrancyScopes): the acquire fn makes synchronously at its
   * start is fn's own lock, re-entered by code running inside fn until fn's result settles.
   */
  runInScope<T>(fn: () => T): T {
    return this.scopes.run(fn);
  }

  /** The handle of a lock held in the current async context (the innermost if key is omitted). */
  current(key?: string, backend = DEFAULT_BACKEND_NAME): LockHandle | undefined {
    const leases = this.scopes.visible();
    const lease =
      key === undefined
        ? leases[leases.length - 1]
        : this.scopes.find(ReentrancyScopes.id(backend, this.keyPrefix + key));
    return lease
      ? new LockHandle(lease, { extend: this.ops.extend, release: async () => undefined })
      : undefined;
  }

  /**
   * The campaign for leadership of `name` in this engine: started on first use and shared by every
   * later caller (options apply at the start). See Leadership.
   */
  leadership(name: string, options?: CampaignOptions): Leadership {
    if (this.ctx.closed)
      throw new LockBackendUnavailableError('engine', 'the lock module was shut down', {
        key: name,
      });
    let election = this.elections.get(name);
    // A resigned campaign is over: campaigning for the same name again starts a new one.
    if (!election?.active)
      this.elections.set(name, (election = new Leadership(this, name, options)));
    return election;
  }

  /** true once close() was called. */
  get isClosed(): boolean {
    return this.ctx.closed;
  }

  /** Number of locks held through this engine (all backends). */
  get heldCount(): number {
    let n = 0;
    for (const w of this.watchdogs.values()) n += w.size;
    return n;
  }

  /** Releases every held lock, stops every watchdog and closes the backends' own resources. */
  close(): Promise<void> {
    return closeEngine(this.ctx, this.elections);
  }

  /** Runs fn outside every caller's async context (see ReentrancyScopes.detached). */
  private readonly detached = <T>(fn: () => T): T => this.scopes.detached(fn);

  /** Made once per engine: a closure made per acquire would keep that call's context alive. */
  private readonly forgetLease = (lease: LockLease): void => {
    this.watchdogs.get(lease.backendName)?.delete(lease);
    this.activity.ended(lease);
  };

  /** Not async (one layer less per release); never throws synchronously. */
  private releaseHold(lease: LockLease): Promise<void> {
    if (lease.holds > 1) {
      lease.holds--;
      return Promise.resolve();
    }
    lease.holds = 0;
    return lease.release(this.releaseCall);
  }

  /** The engine's release call for a lease, made once per engine (not a closure per release). */
  private readonly releaseCall = <T>(op: Promise<T>, what: string, lease: LockLease): Promise<T> =>
    callRelease(this.ctx, op, what, lease);

  private async extendLease(lease: LockLease, ttl: number): Promise<void> {
    const startedAt = performance.now();
    const renewal = this.detached(() => lease.holder.renew([{ ...lease.lock, ttl }]));
    const [ok] = await this.call(
      renewal,
      this.label(lease.backendName),
      'extend',
      this.operationTimeout,
      lease.key,
    );
    if (!ok) {
      lease.lose('extend found it deleted, expired or owned by another owner');
      lease.signal.throwIfAborted();
    }
    if (lease.state !== 'held') return lease.signal.throwIfAborted();
    lease.ttl = ttl;
    lease.validUntil = startedAt + safeValidity(ttl);
    lease.confirmed(startedAt, ttl);
  }

  /** Registered name and kind, as errors show them: "default (redis)". */
  private label(name: string): string {
    return backendLabel(this.backends, name);
  }

  /** Runs one backend call within `budget` ms (see callBackend). */
  private call<T>(
    op: Promise<T>,
    backend: string,
    what: string,
    budget = this.operationTimeout,
    key?: string,
  ): Promise<T> {
    return callBackend(this.activity, op, backend, what, budget, key);
  }
}
