/**
 * The acquire path of one lock (or one native-semaphore seat set): options resolved, key checked,
 * reentrancy looked up, then one attempt or a wait (AcquireRunner) against a deadline, and the
 * grant turned into a LockLease that the watchdog renews. Also the `permits` entry point
 * (acquireSemaphore). LockEngine (lock-engine.ts) builds the AcquireContext once and calls these
 * with it.
 */
import { checkLockKey } from '../backend-kit/key-encoding';
import { MAX_KEY_LENGTH } from '../backend-kit/limits';
import { DEFAULT_BACKEND_NAME } from '../distributed-lock.constants';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import type { AcquireContext } from './acquire-context';
import { waitsNatively } from './acquire-runner';
import { FreshAcquire, type LeaseOutcome } from './fresh-acquire';
import { ELECTION_PROPOSAL } from './leader-election';
import { LockHandle } from './lock-handle';
import { resolveLockOptions } from './lock-options';
import { PREGRANTED, type LockKeys, type PreGrant } from './multi-lock';
import { observeAcquire, unobserved, type ObservedEngine } from './observed-acquire';
import { newOwnerToken } from './owner-token';
import { ReentrancyScopes } from './reentrancy';
import { acquireSeat, checkPermits, type SemaphoreEngine } from './semaphore';

export type { AcquireContext };

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

/**
 * The acquire of one key (or one native-semaphore seat set), as the observed path (and tryAcquire)
 * reads it: `{ handle }`, or `{ error }` for a timeout; any other failure rejects.
 */
export function acquireLease(
  e: AcquireContext,
  key: string,
  options?: LockOptions,
  stats?: { attempts: number; ahead: number },
  permits?: number,
): Promise<LeaseOutcome> {
  return startAcquire(e, key, options, stats, permits, false) as Promise<LeaseOutcome>;
}

/**
 * The same acquire answering its handle, a timeout as a rejection: what LockEngine.acquire calls
 * when nobody observes acquires (no event listener, no tracer), without the outcome object.
 */
export function acquireHandle(
  e: AcquireContext,
  key: string,
  options?: LockOptions,
  permits?: number,
): Promise<LockHandle> {
  return startAcquire(e, key, options, undefined, permits, true) as Promise<LockHandle>;
}

/** Checks the call, re-enters a hold this context owns, or starts a FreshAcquire. Never throws. */
function startAcquire(
  e: AcquireContext,
  key: string,
  options: LockOptions | undefined,
  stats: { attempts: number; ahead: number } | undefined,
  permits: number | undefined,
  direct: boolean,
): Promise<LockHandle | LeaseOutcome> {
  try {
    // Synchronously, before anything else: only the acquire an owning call starts with is its own lock.
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
    // The prefix was checked at start-up (engine-options.ts) and the key just now, so the joined
    // key is clean too (a surrogate pair cannot form across them: a lone half fails either check);
    // only its length is left to check.
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
    // Before any owning call ran, no scope exists: no id to build, nothing to find.
    const id = e.scopes.active
      ? ReentrancyScopes.id(o.backend, permits ? `${fullKey}\u0000#${permits}` : fullKey)
      : '';
    const existing = id ? e.scopes.find(id) : undefined;
    // A grant made for a multi-key acquire (multi-lock.ts) that this context already holds: give it back.
    const pre = (options as { [PREGRANTED]?: PreGrant } | undefined)?.[PREGRANTED];
    if (existing) {
      const reenter = () => {
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
        const handle = new LockHandle(existing, e.ops);
        return direct ? handle : { handle };
      };
      if (!pre) return Promise.resolve(reenter());
      return backend
        .release({ key: fullKey, owner: pre.owner, mode: o.mode, ttl: o.ttl })
        .then(reenter);
    }
    o.signal?.throwIfAborted();
    return new FreshAcquire(e, {
      key,
      fullKey,
      owner: pre?.owner ?? newOwnerToken(),
      options,
      resolved: o,
      backend,
      permits: permits || undefined,
      proposal: (options as { [ELECTION_PROPOSAL]?: string } | undefined)?.[ELECTION_PROPOSAL],
      stats,
      scope,
      id,
      pregranted: pre?.result,
      native: !pre && waitsNatively(backend, o),
      direct,
    }).start();
  } catch (error) {
    return Promise.reject(error);
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
  if (unobserved(engine)) return acquireHandle(e, k, options, permits);
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
