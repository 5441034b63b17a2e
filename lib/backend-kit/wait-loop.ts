import { DistributedLockError } from '../errors/distributed-lock.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { MAX_DURATION_MS } from './limits';

/**
 * The reason the engine gives `request.signal` when the wait deadline passes; a caller's cancel
 * aborts it with the caller's own reason. Backends tell the two apart with `reason ===
 * WAIT_DEADLINE`.
 */
export const WAIT_DEADLINE: unknown = Object.freeze({ reason: 'the wait deadline passed' });

export function asUnavailable(error: unknown, backend: string, key?: string): DistributedLockError {
  if (error instanceof DistributedLockError) return error;
  return new LockBackendUnavailableError(backend, 'the request failed', { key, cause: error });
}

/**
 * Sleeps `ms`, or until `signal` aborts; `onWake` receives a function that ends the sleep early
 * (a backend's wake: a handoff message, a watch event). Ending it again later does nothing.
 */
export function sleepFor(
  ms: number,
  signal?: AbortSignal,
  onWake?: (wake: () => void) => void,
): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    // Clamped: setTimeout turns a delay above 2^31-1 ms into 1 ms (a busy loop, not a long sleep).
    const timer = setTimeout(done, Math.min(Math.max(0, ms), MAX_DURATION_MS));
    signal?.addEventListener('abort', done, { once: true });
    onWake?.(done);
  });
}

/**
 * Settles like `work`, or with `onAbort()` (its value, or what it throws) as soon as `signal`
 * aborts. The work goes on; the caller abandons it (its rejection is then observed, never
 * unhandled).
 */
export function raceAbort<T, A>(
  work: Promise<T>,
  signal: AbortSignal,
  onAbort: () => A,
): Promise<T | A> {
  return new Promise<T | A>((resolve, reject) => {
    const abort = () => {
      // The caller gave up on `work` and got onAbort's answer; whoever started `work` reports its
      // failures (the engine's call wrapper); here it only must not become an unhandled rejection.
      work.catch(() => undefined);
      try {
        resolve(onAbort());
      } catch (error) {
        reject(error);
      }
    };
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}
