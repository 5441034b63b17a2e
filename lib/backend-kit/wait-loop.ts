import { DistributedLockError } from '../errors/distributed-lock.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { MAX_DURATION_MS } from './limits';
import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  ReleaseListener,
  WakeupSource,
} from '../interfaces/lock-backend.interface';

/**
 * The reason the engine gives `request.signal` when the wait deadline passes; a caller's cancel
 * aborts it with the caller's own reason. Backends tell the two apart with `reason === WAIT_DEADLINE`.
 */
export const WAIT_DEADLINE: unknown = Object.freeze({ reason: 'the wait deadline passed' });

export interface PollAcquireOptions {
  /** Backend name for errors. */
  readonly backend: string;
  /** Wakes the waiter when a release is announced; without it the loop polls with backoff. */
  readonly notifier?: WakeupSource;
  /** First poll delay in ms (doubles up to maxDelay, with full jitter). Default 10. */
  readonly minDelay?: number;
  /** Largest poll delay in ms. Default 500. */
  readonly maxDelay?: number;
  /** With a notifier: re-attempt at least this often, so a lost notification cannot strand a waiter. Default 1000. */
  readonly fallbackDelay?: number;
  /**
   * Called once the request is about to wait (its first attempt answered busy or failed, or it
   * starts on a handoff), before the loop reads `request.signal`: the engine starts the wait's
   * deadline timer here, so an acquire granted at its first attempt never creates one.
   */
  readonly onWait?: () => void;
}

/**
 * The wait loop the engine runs for every backend without a native queue (memory, Redis, Redlock,
 * SQL, and any third-party backend that gives only tryAcquire): attempt; on busy, sleep
 * until a release notification, the lock's own expiry (the attempt's retryAfter) or a jittered
 * backoff, whichever comes first; stop when the request's signal aborts (deadline or cancel).
 * A failed attempt (backend unreachable) is retried while the budget lasts; when it runs out, the
 * last failure surfaces as LockBackendUnavailableError, never as a timeout.
 */
export async function pollAcquire(
  request: BackendAcquireRequest,
  attempt: () => Promise<BackendAcquireResult>,
  options: PollAcquireOptions,
  handoff?: ReleaseListener,
): Promise<BackendAcquireResult> {
  const minDelay = options.minDelay ?? 10;
  const maxDelay = options.maxDelay ?? 500;
  const fallback = options.fallbackDelay ?? 1_000;
  // Handed the line right after a local grant (see LocalWaitQueue): the lock is busy, so wait for
  // its release (or the fallback) before the first attempt instead of attempting in vain.
  if (handoff) {
    options.onWait?.();
    await handoff.wait(fallback, request.signal);
  }
  let delay = minDelay;
  let prepared = false;
  for (;;) {
    const listener = options.notifier?.listen(request.key);
    let busy: BackendAcquireResult | undefined;
    let failure: unknown;
    try {
      const sentAt = performance.now();
      busy = await attempt();
      if (busy.acquired) {
        listener?.dispose();
        return { sentAt, ...busy };
      }
    } catch (error) {
      failure = error;
    }
    if (request.wait > 0) options.onWait?.();
    if (request.wait === 0 || request.signal.aborted) {
      listener?.dispose();
      if (failure !== undefined) throw asUnavailable(failure, options.backend, request.key);
      return busy as BackendAcquireResult;
    }
    if (!prepared && options.notifier?.prepare) {
      // First wait: make wake-ups live (Redis subscribes lazily), then re-attempt at once, so a
      // release announced before they were live is not missed. Without them: poll.
      prepared = true;
      listener?.dispose();
      const ok = await options.notifier.prepare(request.key).then(
        () => true,
        () => false,
      );
      if (ok) continue;
    }
    prepared = true;
    let sleep = listener && failure === undefined ? fallback : Math.random() * delay;
    delay = Math.min(delay * 2, maxDelay);
    if (busy && !busy.acquired && busy.retryAfter !== undefined)
      sleep = Math.min(sleep, busy.retryAfter + 1);
    if (listener) await listener.wait(sleep, request.signal);
    else await sleepFor(sleep, request.signal);
    // A cancelled waiter (its caller gave up, e.g. the HTTP client went away) makes no further
    // attempt: one sent now could take the lock after a release and hold it for nobody.
    if (request.signal.aborted && request.signal.reason !== WAIT_DEADLINE) {
      listener?.dispose();
      return busy ?? { acquired: false };
    }
  }
}

export function asUnavailable(error: unknown, backend: string, key?: string): DistributedLockError {
  if (error instanceof DistributedLockError) return error;
  return new LockBackendUnavailableError(backend, 'the request failed', { key, cause: error });
}

export function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
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
  });
}

/**
 * Settles like `work`, or with `onAbort()` (its value, or what it throws) as soon as `signal`
 * aborts. The work goes on; the caller abandons it (its rejection is then observed, never unhandled).
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
