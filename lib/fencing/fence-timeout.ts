import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';

/**
 * How long a fenced store waits for its server's answer to one statement or script before the
 * call fails with LockBackendUnavailableError: a paused or unreachable server must not hold a
 * request for as long as the driver keeps retrying.
 */
export const DEFAULT_FENCE_TIMEOUT_MS = 5_000;
const MAX_FENCE_TIMEOUT_MS = 2 ** 31 - 1;

/** The store's `timeout` option, checked. */
export function fenceTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_FENCE_TIMEOUT_MS;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0)
    return Math.min(value, MAX_FENCE_TIMEOUT_MS);
  throw new InvalidLockOptionsError('timeout', value, 'a positive integer (ms)');
}

/**
 * `op`'s outcome, or LockBackendUnavailableError once `ms` passed first. The operation goes on
 * (a driver cannot take a command back): a write that times out may still land later, and its
 * token is checked by the server when it does.
 */
export function boundedFenceCall<T>(
  op: Promise<T>,
  ms: number,
  store: string,
  resource: string,
  onLate?: (value: T) => void,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(
        new LockBackendUnavailableError(
          store,
          `no answer within the fenced store's timeout of ${ms} ms (option "timeout"); ` +
            'the write may still land, its token checked when it does',
          { key: resource },
        ),
      );
    }, ms);
  });
  // A late failure is not an unhandled rejection; a late value (a connection) is handed back.
  op.then(
    (value) => timedOut && onLate?.(value),
    () => undefined,
  );
  return Promise.race([op, late]).finally(() => clearTimeout(timer));
}
