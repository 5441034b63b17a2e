import { checkLockKey } from '../backend-kit/key-encoding';
import { MAX_DURATION_MS, MAX_KEY_LENGTH } from '../backend-kit/limits';
import { safeValidity } from '../backend-kit/validity';
import { asUnavailable, WAIT_DEADLINE } from '../backend-kit/wait-loop';
import { DEADLINE_GRACE_MS, DEFAULT_BACKEND_NAME } from '../distributed-lock.constants';
import { DistributedLockError } from '../errors/distributed-lock.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { AcquireRunner } from './acquire-runner';
import { ELECTION_PROPOSAL, Leadership, type CampaignOptions } from './leader-election';
import { acquireAll, PREGRANTED, type LockKeys, type PreGrant } from './multi-lock';
import { acquireSeat, checkPermits } from './semaphore';
import { LockHandle, type LeaseOps } from './lock-handle';
import { LazyAbortController } from './lazy-abort';
import { LockLease } from './lock-lease';
import { newOwnerToken } from './owner-token';
import { validateEngineOptions, type LockEngineOptions } from './engine-options';
import { resolveLockOptions, type ResolvedDefaults } from './lock-options';
import { ReentrancyScopes } from './reentrancy';
import { Watchdog } from './watchdog';
import { checkListener, LockEventBus } from './lock-events';
import { LockActivity, LockOperator } from './lock-operations';
import { observeAcquire, reported, runHeld, templateOf } from './observed-acquire';

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
  private readonly held = new Set<LockLease>();
  private readonly scopes = new ReentrancyScopes();
  private readonly runner = new AcquireRunner();
  private readonly elections = new Map<string, Leadership>();
  /** Registered backend names, in registration order. */
  readonly backendNames: readonly string[];
  private closed = false;
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
    const backend = this.backends.get(name);
    if (!backend)
      throw new InvalidLockOptionsError(
        'backend',
        name,
        this.backendNames.map((n) => `'${n}'`).join(', '),
      );
    return backend;
  }

  /**
   * Acquires `key` (or every key of an array, all or nothing, in canonical order), waiting up to
   * `wait` ms. Throws LockAcquireTimeoutError when still busy at the deadline.
   */
  async acquire(key: LockKeys, options?: LockOptions): Promise<LockHandle> {
    if (options?.permits !== undefined) return this.acquireSemaphore(key, options);
    if (Array.isArray(key)) return acquireAll(this, key, options);
    const k = key as string;
    const handle = await observeAcquire(this, k, options, (stats) =>
      this.acquireOrNull(k, options, stats),
    );
    return handle.handle ?? Promise.reject(handle.error);
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
    const result = await observeAcquire(this, k, o, (stats) => this.acquireOrNull(k, o, stats));
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

  private async acquireSemaphore(key: LockKeys, options: LockOptions): Promise<LockHandle> {
    if (Array.isArray(key))
      throw new InvalidLockOptionsError(
        'permits',
        options.permits,
        'a single key (semaphores over several keys are not supported)',
      );
    const k = key as string;
    const permits = checkPermits(options.permits, k);
    // permits: 1 is the exclusive lock of the key itself.
    if (permits === 1) return this.acquire(k, { ...options, permits: undefined });
    const backendName = options.backend ?? DEFAULT_BACKEND_NAME;
    if (!this.backend(backendName).capabilities.semaphore)
      return acquireSeat(this, k, permits, options);
    if (options.mode === 'shared')
      throw new InvalidLockOptionsError(
        'mode',
        'shared',
        "'exclusive' (a semaphore's seats are exclusive; use permits or shared, not both)",
        k,
      );
    const result = await observeAcquire(this, k, options, (stats) =>
      this.acquireOrNull(k, options, stats, permits),
    );
    return result.handle ?? Promise.reject(result.error);
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
    if (this.closed)
      throw new LockBackendUnavailableError('engine', 'the lock module was shut down', {
        key: name,
      });
    let election = this.elections.get(name);
    if (!election) this.elections.set(name, (election = new Leadership(this, name, options)));
    return election;
  }

  /** true once close() was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Number of locks held through this engine (all backends). */
  get heldCount(): number {
    return this.held.size;
  }

  /** Releases every held lock, stops every watchdog and closes the backends' own resources. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.elections.values()].map((e) => e.resign()));
    const leases = [...this.held];
    // Code still running under a lock must learn that it no longer holds it.
    for (const lease of leases) lease.lose('the lock module shut down and released it');
    await Promise.all(
      leases.map((l) =>
        l
          .release((op, what) =>
            this.call(op, this.label(l.backendName), what).catch((e: unknown) => {
              // Reported here: the lost lease's best-effort release swallows the rejection.
              this.activity.releaseFailed(l.backendName, l.key, 'shutdown', e);
              throw e;
            }),
          )
          .catch(reported),
      ),
    );
    for (const w of this.watchdogs.values()) w.stop();
    await Promise.all(
      [...this.backends].map(([name, b]) =>
        b.close().catch((error) => this.activity.failed(name, 'close', error, true)),
      ),
    );
  }

  private async acquireOrNull(
    key: string,
    options?: LockOptions,
    stats?: { attempts: number; ahead: number },
    permits?: number,
  ): Promise<{ handle?: LockHandle; error?: unknown }> {
    // Synchronously, before any await: only the acquire an owning call starts with is its own lock.
    const scope = this.scopes.claim();
    if (this.closed)
      throw new LockBackendUnavailableError('engine', 'the lock module was shut down', { key });
    const o = resolveLockOptions(
      options,
      this.defaults,
      this.backendNames,
      typeof key === 'string' ? key : undefined,
    );
    const backend = this.backend(o.backend);
    checkLockKey(key);
    const fullKey = checkLockKey(
      this.keyPrefix + key,
      Math.min(MAX_KEY_LENGTH, backend.capabilities.maxKeyLength),
    );
    if (o.mode === 'shared' && !backend.capabilities.shared) {
      throw new InvalidLockOptionsError(
        'mode',
        'shared',
        `'exclusive' (backend "${o.backend}" does not support shared locks)`,
        key,
      );
    }
    // A semaphore of a key and the lock of the same key are different things to re-enter.
    const id = ReentrancyScopes.id(o.backend, permits ? `${fullKey}\u0000#${permits}` : fullKey);
    const existing = this.scopes.find(id);
    // A grant made for a multi-key acquire (multi-lock.ts) that this context already holds: give it back.
    const pre = (options as { [PREGRANTED]?: PreGrant } | undefined)?.[PREGRANTED];
    if (existing && pre)
      await backend.release({ key: fullKey, owner: pre.owner, mode: o.mode, ttl: o.ttl });
    if (existing) {
      if (existing.mode === 'shared' && o.mode === 'exclusive') {
        throw new InvalidLockOptionsError(
          'mode',
          'exclusive',
          `'shared': this context already holds "${key}" shared, and upgrading would deadlock`,
          key,
        );
      }
      existing.holds++;
      if (scope) this.scopes.remember(scope, id, existing);
      return { handle: new LockHandle(existing, this.ops) };
    }
    o.signal?.throwIfAborted();

    const owner = pre?.owner ?? newOwnerToken();
    const proposal = (options as { [ELECTION_PROPOSAL]?: string } | undefined)?.[ELECTION_PROPOSAL];
    const controller = new LazyAbortController();
    const detached = this.detached;
    const startedAt = performance.now();
    // The deadline timer starts only when the request really waits (queued, busy at its first
    // attempt, or handed to a backend's native wait), counting from startedAt: a grant at the first
    // attempt (the uncontended case) and wait: 0 (one attempt) never create one. An attempt in
    // flight is bounded by the call budget below (wait + grace) either way.
    // The caller's signal is listened to from then on too: before it, the only thing in flight is
    // the first attempt, whose grant is given back below if the signal aborted meanwhile. An
    // uncontended acquire with a signal (every @Locked call inside an HTTP request) thus adds and
    // removes no listener.
    let deadline: ReturnType<typeof setTimeout> | undefined;
    let armed = false;
    const onCancel = () => controller.abort(o.signal?.reason);
    const onWait = () => {
      if (armed) return;
      armed = true;
      if (o.signal?.aborted) return controller.abort(o.signal.reason);
      o.signal?.addEventListener('abort', onCancel, { once: true });
      const left = o.wait - (performance.now() - startedAt);
      if (left <= 0) controller.abort(WAIT_DEADLINE);
      else deadline = detached(() => setTimeout(() => controller.abort(WAIT_DEADLINE), left));
    };
    let lease: LockLease | undefined;
    const onLost = (reason: string, cause?: unknown) => lease?.lose(reason, cause);
    const request = {
      key: fullKey,
      owner,
      mode: o.mode,
      ttl: o.ttl,
      ...(permits ? { permits } : {}),
      ...(proposal === undefined ? {} : { election: { proposal } }),
      wait: o.wait,
      get signal() {
        return controller.signal;
      },
      onLost,
    };
    this.activity.enter(o.backend, key, stats);
    try {
      // The wait runs outside the caller's context: sessions, subscriptions and timers a backend
      // starts for it must not carry one request's reentrancy scope into everyone's callbacks.
      const attempt = pre
        ? Promise.resolve(pre.result)
        : detached(() => this.runner.run(backend, this.label(o.backend), request, stats, onWait));
      // wait may be up to MAX_DURATION_MS: the grace must not push a timer past what setTimeout honours.
      const budget = Math.min(
        MAX_DURATION_MS,
        Math.max(o.wait + DEADLINE_GRACE_MS, this.operationTimeout),
      );
      let result: Awaited<typeof attempt>;
      try {
        result = await this.call(attempt, this.label(o.backend), 'acquire', budget, key, () => {
          // The answer came after we gave up: give back a grant nobody will use.
          const lock = { key: fullKey, owner, mode: o.mode, ttl: o.ttl, permits };
          attempt
            .then((late) => (late.acquired ? detached(() => backend.release(lock)) : undefined))
            .catch((e) => this.activity.releaseFailed(o.backend, key, 'late-grant', e));
        });
      } catch (error) {
        // Whatever made the engine give up (its own budget timer, a failure), the backend's wait
        // stops now instead of polling for a caller that is gone. (A try, not a .catch(): no
        // extra promise per acquire.)
        controller.abort(WAIT_DEADLINE);
        throw error;
      }
      if (!result.acquired) {
        if (o.signal?.aborted) throw o.signal.reason;
        return { error: new LockAcquireTimeoutError(key, o.wait, result.retryAfter) };
      }
      if (o.signal?.aborted) {
        await detached(() =>
          backend.release({ key: fullKey, owner, mode: o.mode, ttl: o.ttl, permits }),
        ).catch((e) => this.activity.releaseFailed(o.backend, key, 'cancelled', e));
        throw o.signal.reason;
      }
      // Validity counts from when the granting request was sent, never from the start of the wait.
      const grantedAt =
        result.sentAt ?? (backend.capabilities.sessionBased ? performance.now() : startedAt);
      lease = new LockLease({
        key,
        fullKey,
        owner,
        mode: o.mode,
        ttl: o.ttl,
        permits,
        fencingToken: result.fencingToken,
        backend,
        backendName: o.backend,
        grantedAt,
        validity: Math.min(result.validity ?? Infinity, safeValidity(o.ttl)),
        maxHold: o.maxHold,
        minHold: o.minHold,
        onEnd: this.forgetLease,
        detached,
      });
      this.held.add(lease);
      if (stats || this.events.active) this.activity.granted(lease, templateOf(options));
      this.watchdogs.get(o.backend)?.add(lease);
      if (scope) this.scopes.remember(scope, id, lease);
      return { handle: new LockHandle(lease, this.ops) };
    } finally {
      if (deadline !== undefined) clearTimeout(deadline);
      this.activity.leave(o.backend, key);
      if (armed) o.signal?.removeEventListener('abort', onCancel);
    }
  }

  /** Registered name and kind, as errors show them: "default (redis)". */
  private label(name: string): string {
    const kind = this.backends.get(name)?.name;
    return kind && kind !== name ? `${name} (${kind})` : name;
  }

  /** Runs fn outside every caller's async context (see ReentrancyScopes.detached). */
  private readonly detached = <T>(fn: () => T): T => this.scopes.detached(fn);

  /**
   * Created once per engine: a closure made inside acquireOrNull would keep that call's whole
   * context (deadline controller, request, attempt promise) alive for as long as the lock is held.
   */
  private readonly forgetLease = (lease: LockLease): void => {
    this.held.delete(lease);
    this.watchdogs.get(lease.backendName)?.delete(lease);
    this.activity.ended(lease);
  };

  private async releaseHold(lease: LockLease): Promise<void> {
    if (lease.holds > 1) {
      lease.holds--;
      return;
    }
    lease.holds = 0;
    await lease.release((op, what) =>
      this.call(op, this.label(lease.backendName), what, this.operationTimeout, lease.key).catch(
        this.activity.releaseReporter(lease),
      ),
    );
  }

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

  /**
   * Runs one backend call within `budget` ms. A call that fails or does not answer in time becomes
   * LockBackendUnavailableError (fail closed); `onLate` lets the caller undo an answer that arrives after.
   */
  private call<T>(
    op: Promise<T>,
    backend: string,
    what: string,
    budget = this.operationTimeout,
    key?: string,
    onLate?: () => void,
  ): Promise<T> {
    budget = Math.min(budget, MAX_DURATION_MS);
    const activity = this.activity;
    // Outages are noted here, in the settle callbacks this call needs anyway; only the first
    // outcome counts (an answer after the budget ran out is onLate's business, not an outage's end).
    let done = false;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        done = true;
        const error = new LockBackendUnavailableError(
          backend,
          `${what} got no answer within ${Math.round(budget)} ms`,
          { key },
        );
        activity.settled(backend, what, error, true);
        reject(error);
        onLate?.();
      }, budget);
      op.then(
        (value) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          activity.settled(backend, what);
          resolve(value);
        },
        (cause) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          const error = asUnavailable(cause, backend, key);
          activity.settled(backend, what, error, true);
          reject(error);
        },
      );
    });
  }
}

export { raceLost } from './lock-handle';
export { DistributedLockError };
