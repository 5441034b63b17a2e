import { asUnavailable, sleepFor, WAIT_DEADLINE } from '../../backend-kit/wait-loop';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  ReleaseListener,
  WakeupSource,
} from '../../interfaces/lock-backend.interface';

export interface PollAcquireOptions {
  /** Backend name for errors. */
  readonly backend: string;
  /** Wakes the waiter when a release is announced; without it the loop polls with backoff. */
  readonly notifier?: WakeupSource;
  /** First poll delay in ms (doubles up to maxDelay, with full jitter). Default 10. */
  readonly minDelay?: number;
  /** Largest poll delay in ms. Default 500. */
  readonly maxDelay?: number;
  /**
   * With a notifier: re-attempt at least this often, so a lost notification cannot strand a waiter.
   * Default 1000.
   */
  readonly fallbackDelay?: number;
}

/** One busy or failed attempt: its answer (busy), or its failure (backend unreachable). */
type Answer = { result?: BackendAcquireResult; failure?: unknown };

/** The loop's state across attempts. */
interface WaitState {
  delay: number;
  prepared: boolean;
}

/** How long to sleep before the next attempt: a wake-up, the holder's expiry, or a backoff. */
function sleepTime(answer: Answer, listening: boolean, delay: number, fallback: number): number {
  let sleep = listening && answer.failure === undefined ? fallback : Math.random() * delay;
  const busy = answer.result;
  if (busy && !busy.acquired && busy.retryAfter !== undefined)
    sleep = Math.min(sleep, busy.retryAfter + 1);
  return sleep;
}

/** Makes wake-ups live (Redis subscribes lazily); false when that failed. */
function prepare(notifier: WakeupSource, key: string): Promise<boolean> {
  return notifier.prepare!(key).then(
    () => true,
    () => false,
  );
}

/**
 * After a busy or failed attempt: the answer to give (no wait left, or cancelled), or undefined
 * once it slept and the loop should attempt again.
 */
async function afterBusy(
  request: BackendAcquireRequest,
  options: PollAcquireOptions,
  onWait: (() => void) | undefined,
  listener: ReleaseListener | undefined,
  answer: Answer,
  state: WaitState,
): Promise<BackendAcquireResult | undefined> {
  if (request.wait > 0) onWait?.();
  if (request.wait === 0 || request.signal.aborted) {
    listener?.dispose();
    if (answer.failure !== undefined)
      throw asUnavailable(answer.failure, options.backend, request.key);
    return answer.result as BackendAcquireResult;
  }
  if (!state.prepared) {
    // First wait: make wake-ups live, then re-attempt at once, so a release announced before
    // they were live is not missed. Without them: poll.
    state.prepared = true;
    if (options.notifier?.prepare) {
      listener?.dispose();
      if (await prepare(options.notifier, request.key)) return undefined;
    }
  }
  const fallback = options.fallbackDelay ?? 1_000;
  const sleep = sleepTime(answer, listener !== undefined, state.delay, fallback);
  state.delay = Math.min(state.delay * 2, options.maxDelay ?? 500);
  if (listener) await listener.wait(sleep, request.signal);
  else await sleepFor(sleep, request.signal);
  // A cancelled waiter (its caller gave up, e.g. the HTTP client went away) makes no further
  // attempt: one sent now could take the lock after a release and hold it for nobody.
  if (request.signal.aborted && request.signal.reason !== WAIT_DEADLINE) {
    listener?.dispose();
    return answer.result ?? { acquired: false };
  }
  return undefined;
}

/** A failure no later attempt of this wait can mend: a wrong request, or a final outage. */
function isFinal(failure: unknown): boolean {
  return (
    failure instanceof InvalidLockOptionsError ||
    (failure instanceof LockBackendUnavailableError && failure.final)
  );
}

/**
 * The wait loop the engine runs for every grant without a wait of its backend's own (memory,
 * Redis, ZooKeeper, Redlock, SQL, any third-party backend's tryAcquire): attempt; on busy, sleep
 * until the busy answer's own wake (the system queued us: a handoff, a watch), a release
 * notification, the lock's own expiry (the attempt's retryAfter) or a jittered backoff, whichever
 * comes first; stop when the request's signal aborts (deadline or cancel). A failed attempt
 * (backend unreachable) is retried while the budget lasts, unless its error is final; when it runs
 * out, the last failure surfaces as LockBackendUnavailableError, never as a timeout. `onWait` is
 * called once the request is about to wait (its first attempt answered busy or failed, or it
 * starts on a handoff), before the loop reads `request.signal`: the engine starts the wait's
 * deadline timer there, so an acquire granted at its first attempt never creates one. `leave`
 * (LockBackend.leave) runs when a wait (wait > 0) ends without a grant, once its last attempt
 * settled.
 */
export async function pollAcquire(
  request: BackendAcquireRequest,
  attempt: () => Promise<BackendAcquireResult>,
  options: PollAcquireOptions,
  handoff?: ReleaseListener,
  onWait?: () => void,
  leave?: (request: BackendAcquireRequest) => Promise<void>,
): Promise<BackendAcquireResult> {
  // Handed the line right after a local grant (see LocalWaitQueue): the lock is busy, so wait for
  // its release (or the fallback) before the first attempt instead of attempting in vain.
  if (handoff) {
    onWait?.();
    await handoff.wait(options.fallbackDelay ?? 1_000, request.signal);
  }
  let state: WaitState | undefined; // made at the first busy answer (a grant needs none)
  for (;;) {
    let listener = options.notifier?.listen(request.key);
    let answer: Answer;
    try {
      const sentAt = performance.now();
      const result = await attempt();
      if (result.acquired) {
        listener?.dispose();
        return { sentAt, ...result };
      }
      answer = { result };
      if (result.wake) {
        listener?.dispose();
        listener = result.wake;
      }
    } catch (failure) {
      answer = { failure };
    }
    let done: BackendAcquireResult | undefined;
    try {
      if (isFinal(answer.failure)) {
        listener?.dispose();
        throw answer.failure;
      }
      state ??= { delay: options.minDelay ?? 10, prepared: false };
      done = await afterBusy(request, options, onWait, listener, answer, state);
    } catch (error) {
      if (leave && request.wait > 0) await leave(request);
      throw error;
    }
    if (done) {
      if (leave && request.wait > 0) await leave(request);
      return done;
    }
  }
}
