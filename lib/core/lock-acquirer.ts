/**
 * The acquire path of one lock (or one native-semaphore seat set): options resolved, key checked,
 * reentrancy looked up, then one attempt or a wait (AcquireRunner) against a deadline, and the
 * grant turned into a LockLease that the watchdog renews. Also the `permits` entry point
 * (acquireSemaphore). LockEngine (lock-engine.ts) builds the AcquireContext once and calls these
 * with it.
 */
import { checkLockKey } from '../backend-kit/key-encoding';
import { MAX_DURATION_MS, MAX_KEY_LENGTH } from '../backend-kit/limits';
import type { SteadySet } from '../backend-kit/steady-collections';
import { safeValidity } from '../backend-kit/validity';
import { WAIT_DEADLINE } from '../backend-kit/wait-loop';
import { DEADLINE_GRACE_MS, DEFAULT_BACKEND_NAME } from '../distributed-lock.constants';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { waitsNatively, type AcquireRunner } from './acquire-runner';
import { backendLabel, callBackend } from './backend-call';
import { ELECTION_PROPOSAL } from './leader-election';
import type { LockActivity } from './lock-activity';
import type { LockEventBus } from './lock-events';
import { LockHandle, type LeaseOps } from './lock-handle';
import { LazyAbortController } from './lazy-abort';
import { LockLease } from './lock-lease';
import { resolveLockOptions, type ResolvedDefaults } from './lock-options';
import { PREGRANTED, type LockKeys, type PreGrant } from './multi-lock';
import { observeAcquire, templateOf, type ObservedEngine } from './observed-acquire';
import { newOwnerToken } from './owner-token';
import { ReentrancyScopes } from './reentrancy';
import { acquireSeat, checkPermits, type SemaphoreEngine } from './semaphore';
import type { Watchdog } from './watchdog';

/** The engine's state the acquire path reads and updates; one object per engine, made at construction. */
export interface AcquireContext {
  readonly backends: ReadonlyMap<string, LockBackend>;
  readonly backendNames: readonly string[];
  readonly keyPrefix: string;
  readonly defaults: ResolvedDefaults;
  readonly operationTimeout: number;
  readonly events: LockEventBus;
  readonly activity: LockActivity;
  readonly scopes: ReentrancyScopes;
  readonly runner: AcquireRunner;
  readonly held: SteadySet<LockLease>;
  readonly watchdogs: ReadonlyMap<string, Watchdog>;
  readonly ops: LeaseOps<LockLease>;
  /** Set by LockEngine.close(). */
  closed: boolean;
  /** Runs fn outside every caller's async context (see ReentrancyScopes.detached). */
  readonly detached: <T>(fn: () => T) => T;
  /** Called once per lease when it ends; made once per engine (see LockEngine.forgetLease). */
  readonly forgetLease: (lease: LockLease) => void;
}

/** The registered backend `name`; InvalidLockOptionsError listing the registered names otherwise. */
export function findBackend(
  e: Pick<AcquireContext, 'backends' | 'backendNames'>,
  name: string,
): LockBackend {
  const backend = e.backends.get(name);
  if (!backend)
    throw new InvalidLockOptionsError(
      'backend',
      name,
      e.backendNames.map((n) => `'${n}'`).join(', '),
    );
  return backend;
}

export async function acquireLease(
  e: AcquireContext,
  key: string,
  options?: LockOptions,
  stats?: { attempts: number; ahead: number },
  permits?: number,
): Promise<{ handle?: LockHandle; error?: unknown }> {
  // Synchronously, before any await: only the acquire an owning call starts with is its own lock.
  const scope = e.scopes.claim();
  if (e.closed)
    throw new LockBackendUnavailableError('engine', 'the lock module was shut down', { key });
  const o = resolveLockOptions(
    options,
    e.defaults,
    e.backendNames,
    typeof key === 'string' ? key : undefined,
  );
  const backend = findBackend(e, o.backend);
  checkLockKey(key);
  // The prefix was checked at start-up (engine-options.ts) and the key just now, so the joined key
  // is clean too (a surrogate pair cannot form across them: a lone half fails either check); only
  // its length is left to check.
  const fullKey = e.keyPrefix + key;
  const maxLength = Math.min(MAX_KEY_LENGTH, backend.capabilities.maxKeyLength);
  if (fullKey.length > maxLength) checkLockKey(fullKey, maxLength);
  if (o.mode === 'shared' && !backend.capabilities.shared) {
    throw new InvalidLockOptionsError(
      'mode',
      'shared',
      `'exclusive' (backend "${o.backend}" does not support shared locks)`,
      key,
    );
  }
  // A semaphore of a key and the lock of the same key are different things to re-enter.
  // Before any owning call ran, no scope exists: no id to build, nothing to find (scope is undefined).
  const id = e.scopes.active
    ? ReentrancyScopes.id(o.backend, permits ? `${fullKey}\u0000#${permits}` : fullKey)
    : '';
  const existing = id ? e.scopes.find(id) : undefined;
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
    if (scope) e.scopes.remember(scope, id, existing);
    return { handle: new LockHandle(existing, e.ops) };
  }
  o.signal?.throwIfAborted();

  const owner = pre?.owner ?? newOwnerToken();
  const proposal = (options as { [ELECTION_PROPOSAL]?: string } | undefined)?.[ELECTION_PROPOSAL];
  const controller = new LazyAbortController();
  const detached = e.detached;
  const startedAt = performance.now();
  // The deadline timer starts only when the request really waits (queued or busy at its first
  // attempt in the engine's wait; for a backend's native wait, when the backend first reads
  // request.signal, which it must before it sleeps), counting from startedAt: a grant at the first
  // attempt (the uncontended case) and wait: 0 (one attempt) never create one. An attempt in
  // flight is bounded by the call budget below (wait + grace) either way, so is a native wait
  // that never reads the signal.
  // The caller's signal is listened to from then on too: before it, the only thing in flight is
  // the first attempt, whose grant is given back below if the signal aborted meanwhile. An
  // uncontended acquire with a signal (every @Locked call inside an HTTP request) thus adds and
  // removes no listener.
  let deadline: ReturnType<typeof setTimeout> | undefined;
  let armed = false;
  let onCancel: (() => void) | undefined;
  const onWait = () => {
    if (armed) return;
    armed = true;
    if (o.signal?.aborted) return controller.abort(o.signal.reason);
    if (o.signal) {
      onCancel = () => controller.abort(o.signal?.reason);
      o.signal.addEventListener('abort', onCancel, { once: true });
    }
    const left = o.wait - (performance.now() - startedAt);
    if (left <= 0) controller.abort(WAIT_DEADLINE);
    else deadline = detached(() => setTimeout(() => controller.abort(WAIT_DEADLINE), left));
  };
  const native = !pre && waitsNatively(backend, o);
  const label = backendLabel(e.backends, o.backend);
  let lease: LockLease | undefined;
  const onLost = (reason: string, cause?: unknown) => lease?.lose(reason, cause);
  // One literal with every field (no spreads: spreading into a literal that has a getter builds it
  // property by property, in the slow path); absent options are undefined, as backends test them.
  const request = {
    key: fullKey,
    owner,
    mode: o.mode,
    ttl: o.ttl,
    permits: permits || undefined,
    election: proposal === undefined ? undefined : { proposal },
    wait: o.wait,
    get signal() {
      if (native && !armed) onWait();
      return controller.signal;
    },
    onLost,
  };
  e.activity.enter(o.backend, key, stats);
  try {
    // The wait runs outside the caller's context: sessions, subscriptions and timers a backend
    // starts for it must not carry one request's reentrancy scope into everyone's callbacks.
    const attempt = pre
      ? Promise.resolve(pre.result)
      : detached(() => e.runner.run(backend, label, request, stats, onWait));
    // wait may be up to MAX_DURATION_MS: the grace must not push a timer past what setTimeout honours.
    const budget = Math.min(
      MAX_DURATION_MS,
      Math.max(o.wait + DEADLINE_GRACE_MS, e.operationTimeout),
    );
    let result: Awaited<typeof attempt>;
    try {
      result = await callBackend(e.activity, attempt, label, 'acquire', budget, key, () => {
        // The answer came after we gave up: give back a grant nobody will use.
        const lock = { key: fullKey, owner, mode: o.mode, ttl: o.ttl, permits };
        attempt
          .then((late) => (late.acquired ? detached(() => backend.release(lock)) : undefined))
          .catch((error) => e.activity.releaseFailed(o.backend, key, 'late-grant', error));
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
      ).catch((error) => e.activity.releaseFailed(o.backend, key, 'cancelled', error));
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
      onEnd: e.forgetLease,
      detached,
    });
    e.held.add(lease);
    if (stats || e.events.active) e.activity.granted(lease, templateOf(options));
    e.watchdogs.get(o.backend)?.add(lease);
    if (scope) e.scopes.remember(scope, id, lease);
    return { handle: new LockHandle(lease, e.ops) };
  } finally {
    if (deadline !== undefined) clearTimeout(deadline);
    e.activity.leave(o.backend, key);
    if (onCancel) o.signal?.removeEventListener('abort', onCancel);
  }
}

/**
 * The `permits` entry point: a native semaphore where the backend has one, else seats
 * (semaphore.ts). Not async: its checks throw synchronously (the engine turns that into a
 * rejection), and the acquire's own promise is returned as is.
 */
export function acquireSemaphore(
  engine: SemaphoreEngine & ObservedEngine,
  e: AcquireContext,
  key: LockKeys,
  options: LockOptions,
): Promise<LockHandle> {
  if (Array.isArray(key))
    throw new InvalidLockOptionsError(
      'permits',
      options.permits,
      'a single key (semaphores over several keys are not supported)',
    );
  const k = key as string;
  const permits = checkPermits(options.permits, k);
  // permits: 1 is the exclusive lock of the key itself.
  if (permits === 1) return engine.acquire(k, { ...options, permits: undefined });
  const backendName = options.backend ?? DEFAULT_BACKEND_NAME;
  if (!findBackend(e, backendName).capabilities.semaphore)
    return acquireSeat(engine, k, permits, options);
  if (options.mode === 'shared')
    throw new InvalidLockOptionsError(
      'mode',
      'shared',
      "'exclusive' (a semaphore's seats are exclusive; use permits or shared, not both)",
      k,
    );
  return observeAcquire(engine, k, options, (stats) =>
    acquireLease(e, k, options, stats, permits),
  ).then(handleOf);
}

/** The handle of an acquire's outcome, or its error as a rejection. */
export function handleOf(outcome: {
  handle?: LockHandle;
  error?: unknown;
}): LockHandle | Promise<never> {
  return outcome.handle ?? Promise.reject(outcome.error);
}
