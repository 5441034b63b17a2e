/**
 * Semaphores (`permits: N`): at most N holders of one key. A layer over the acquire pipeline: on
 * a backend with a native form (LockBackend.semaphore) a grant is one permit of it, taken through
 * the pipeline with the semaphore's GrantDriver; elsewhere the permits are N ordinary locks
 * `<key>#<i>` (lock-semaphore.ts). Either way a grant is a handle like a lock's (watchdog
 * renewal, loss signal, release, the permit's fencing token). `permits: 1` is a semaphore of one,
 * never the plain lock of the key.
 */
import type { LockHandle } from '../core/lease/lock-handle';
import type { GrantDriver } from '../core/acquire/pipeline-context';
import type { AcquireMeta, RecipeHost } from '../core/recipe-host';
import type { LockKeys } from '../core/keys/key-list';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { SemaphoreBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { acquirePermit } from './lock-semaphore';

/** Largest `permits` accepted: each busy round over permit locks tries every permit. */
export const MAX_PERMITS = 1_000;

export function checkPermits(value: unknown, key?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_PERMITS) {
    throw new InvalidLockOptionsError('permits', value, `an integer from 1 to ${MAX_PERMITS}`, key);
  }
  return value;
}

/** The `permits` entry point: one permit of semaphore `key`. */
export function acquireSemaphore(
  host: RecipeHost,
  key: LockKeys,
  options: LockOptions,
  meta?: AcquireMeta,
): Promise<LockHandle> {
  if (Array.isArray(key))
    throw new InvalidLockOptionsError(
      'permits',
      options.permits,
      'a single key (semaphores over several keys are not supported)',
    );
  const k = key as string;
  const permits = checkPermits(options.permits, k);
  if (options.mode === 'shared')
    throw new InvalidLockOptionsError(
      'mode',
      'shared',
      "'exclusive' (a semaphore's permits are exclusive; use permits or shared, not both)",
      k,
    );
  const native = host.backend(options.backend).semaphore;
  if (!native) return acquirePermit(host, k, permits, options, meta);
  return host.acquireOne({ key: k, options, driver: permitDriver(native, permits), ...meta });
}

/** How the pipeline takes a permit of a native semaphore of `permits`. */
function permitDriver(semaphore: SemaphoreBackend, permits: number): GrantDriver {
  const { leave } = semaphore;
  return {
    tryAcquire: (request) => semaphore.tryAcquire(request, permits),
    leave: leave && ((request) => leave.call(semaphore, request)),
    holder: semaphore,
    reentry: `\u0000#${permits}`,
    manyHolders: true,
  };
}
