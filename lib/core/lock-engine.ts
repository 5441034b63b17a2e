import { safeValidity } from '../backend-kit/validity';
import { DEFAULT_BACKEND_NAME } from '../distributed-lock.constants';
import { DistributedLockError } from '../errors/distributed-lock.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { AcquireRunner } from './acquire-runner';
import { backendLabel, callBackend } from './backend-call';
import { callRelease } from './release-call';
import { closeEngine } from './engine-close';
import {
  acquireHandle,
  acquireLease,
  acquireSemaphore,
  findBackend,
  handleOf,
  type AcquireContext,
} from './lock-acquirer';
import { Leadership, type CampaignOptions } from './leader-election';
import { acquireAll, type LockKeys } from './multi-lock';
import { LockHandle, type LeaseOps } from './lock-handle';
import { leaseSet, LockLease } from './lock-lease';
import { validateEngineOptions, type LockEngineOptions } from './engine-options';
import { resolveLockOptions, type ResolvedDefaults } from './lock-options';
import { ReentrancyScopes } from './reentrancy';
import { Watchdog } from './watchdog';
import { checkListener, LockEventBus } from './lock-events';
import { LockActivity, LockOperator } from './lock-operations';
import { observeAcquire, reported, runHeld, unobserved } from './observed-acquire';

export type { LockEngineOptions } from './engine-options';

/**
 * The framework-free engine: validates options, resolves keys, runs acquires against a deadline,
 * keeps reentrancy per async context, owns one watchdog per backend, and hands out LockHandles.
 * LockService (the Nest layer) is a thin wrapper over it.
 */
export class LockEngine {
  readonly backends: ReadonlyMap<string, LockBackend>;
  readonly keyPrefix: string;
  readonly defaults: ResolvedDefaults;
  readonly operationTimeout: number;
  private readonly watchdogs = new Map<string, Watchdog>();
  private readonly held = leaseSet('held');
  private readonly scopes = new ReentrancyScopes();
  private readonly runner = new AcquireRunner();
  private readonly elections = new Map<string, Leadership>();
  /** Registered backend names, in registration order. */
  readonly backendNames: readonly string[];
  /** What the acquire path (lock-acquirer.ts) reads and updates; `closed` lives there. */
  private readonly ctx: AcquireContext;
  readonly events = new LockEventBus(); // lock events + tracing hooks (Logger, OpenTelemetry subscribe)
  readonly activity = new LockActivity(this.events);
  readonly operator: LockOperator; // inspect, forceRelease, list, probe, heldLocks, waitingLocks
  private readonly ops: LeaseOps<LockLease> = {
    extend: (lease, ttl) => this.extendLease(lease, ttl),
    release: (lease) => this.releaseHold(lease),
  };

  constructor(options: LockEngineOptions) {
    const o = validateEngineOptions(options);
    this.backends = o.backends;
    this.backendNames = [...o.backends.keys()];
    this.keyPrefix = o.keyPrefix;
    this.defaults = o.defaults;
    this.operationTimeout = o.operationTimeout;
    this.ctx = {
      backends: this.backends,
      backendNames: this.backendNames,
      keyPrefix: this.keyPrefix,
      defaults: this.defaults,
      operationTimeout: this.operationTimeout,
      events: this.events,
      activity: this.activity,
      scopes: this.scopes,
      runner: this.runner,
      held: this.held,
      watchdogs: this.watchdogs,
      ops: this.ops,
      closed: false,
      detached: this.detached,
      detachedWith: (fn, arg) => this.scopes.detachedWith(fn, arg),
      forgetLease: this.forgetLease,
    };
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
          backend,
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
      heldLeases: () => this.held,
      call: (op, n, what, key) => this.call(op, this.label(n), what, this.operationTimeout, key),
    });
  }

  /** Validated options for one call; exposed so @Locked can validate at startup. */
  resolveOptions(options: LockOptions | undefined, key?: string) {
    return resolveLockOptions(options, this.defaults, this.backendNames, key);
  }

  backend(name = DEFAULT_BACKEND_NAME): LockBackend {
    return findBackend(this, name);
  }

  /**
   * Acquires `key` (or every key of an array, all or nothing, in canonical order), waiting up to
   * `wait` ms. Throws LockAcquireTimeoutError when still busy at the deadline.
   */
  acquire(key: LockKeys, options?: LockOptions): Promise<LockHandle> {
    // Not async (one layer less per acquire); a synchronous throw (bad input) still rejects.
    try {
      if (options?.permits !== undefined) return acquireSemaphore(this, this.ctx, key, options);
      if (Array.isArray(key)) return acquireAll(this, key, options);
      const k = key as string;
      if (unobserved(this)) return acquireHandle(this.ctx, k, options);
      return observeAcquire(this, k, options, (stats) =>
        acquireLease(this.ctx, k, options, stats),
      ).then(handleOf);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Tries once (never waits, whatever the defaults): the handle, or null when the lock is busy. */
  async tryAcquire(key: LockKeys, options?: LockOptions): Promise<LockHandle | null> {
    const wait = options?.wait;
    if (wait !== undefined && wait !== 0) {
      throw new InvalidLockOptionsError(
        'wait',
        wait,
        '0 or omitted: tryAcquire tries once (use acquire to wait)',
        String(key),
      );
    }
    if (Array.isArray(key) || options?.permits !== undefined) {
      return this.acquire(key, { ...options, wait: 0 }).catch((error) => {
        if (error instanceof LockAcquireTimeoutError) return null;
        throw error;
      });
    }
    const k = key as string;
    const o = { ...options, wait: 0 };
    const result = await observeAcquire(this, k, o, (stats) => acquireLease(this.ctx, k, o, stats));
    if (result.handle) return result.handle;
    if (result.error instanceof LockAcquireTimeoutError) return null;
    throw result.error;
  }

  /** Runs fn under the lock; renewed while fn runs, released in finally, rejects at once if the lock is lost. */
  withLock<T>(
    key: LockKeys,
    fn: (handle: LockHandle) => T | Promise<T>,
    options?: LockOptions,
  ): Promise<T> {
    return this.scopes.run(async () => {
      const handle = await this.acquire(key, options);
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
    if (!election) this.elections.set(name, (election = new Leadership(this, name, options)));
    return election;
  }

  /** true once close() was called. */
  get isClosed(): boolean {
    return this.ctx.closed;
  }

  /** Number of locks held through this engine (all backends). */
  get heldCount(): number {
    return this.held.size;
  }

  /** Releases every held lock, stops every watchdog and closes the backends' own resources. */
  close(): Promise<void> {
    return closeEngine(this.ctx, this.elections);
  }

  /** Runs fn outside every caller's async context (see ReentrancyScopes.detached). */
  private readonly detached = <T>(fn: () => T): T => this.scopes.detached(fn);

  /** Made once per engine: a closure made in acquireLease would keep that call's context alive. */
  private readonly forgetLease = (lease: LockLease): void => {
    this.held.delete(lease);
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
    const renewal = this.detached(() => lease.backend.renew([{ ...lease.lock, ttl }]));
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

export { raceLost } from './lock-handle';
export { DistributedLockError };
