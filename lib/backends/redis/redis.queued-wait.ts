import { asUnavailable } from '../../backend-kit';
import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendAttempt,
} from '../../interfaces/lock-backend.interface';
import { RedisConnectionDownError } from '../redis-client';
import { busy, type Phase } from './redis.commands';
import type { HandoffWaiter, RedisHandoffs } from './redis.handoffs';

/**
 * A queued waiter re-checks on the server at least this often (a lost message, an expired holder).
 */
const RECHECK_MS = 5_000;
/** How long a waiter that gave up waits for its leave before resolving (the leave goes on). */
const LEAVE_WAIT_MS = 50;

/** An attempt script's answer: `[1, token]` granted, else `[0, holder's PTTL or -1]`. */
export type AttemptReply = [number, string | number];

/**
 * What a queued wait needs from the lock or the semaphore (RedisGrants, redis.grants.ts).
 * Each builds ONE of these when it is made, so a wait allocates nothing for it.
 */
export interface QueuedWaitSteps {
  /** Names the backend in LockBackendUnavailableError. */
  readonly name: string;
  readonly handoffs: RedisHandoffs;
  /** One attempt script: grant, or queue (`phase` 'wait'), or re-check our place ('recheck'). */
  attempt(request: BackendAttempt, phase: Phase, waitMs: number): Promise<unknown>;
  /** An attempt's answer as an AttemptReply (no promise of its own per attempt). */
  reply(answer: unknown): AttemptReply;
  /** A grant's last step (replica acknowledgements where configured; none: the result at once). */
  granted(
    request: BackendAttempt,
    /** The script's reply: always the server's token, never a message's. */
    token: string | number,
    sentAt: number,
  ): BackendAcquireResult | Promise<BackendAcquireResult>;
  /** Makes the process channel live (failures are not this wait's error: it re-checks instead). */
  subscribe(): Promise<void>;
  /**
   * The leave script: takes a waiter that gave up out of the queue (and gives back a grant that
   * raced with it).
   */
  leaveScript(request: BackendAttempt): Promise<unknown>;
  /**
   * An attempt's failure that ends the wait at once instead of being retried: a grant too few
   * replicas acknowledged (it was given back; the caller must hear why, not a budget message).
   */
  final?(error: unknown): boolean;
}

/**
 * The queued wait of the Redis lock and semaphore. The first attempt queues us (phase 'wait'; or,
 * with 'try', makes a plain attempt while the subscription is on its way, then subscribes and
 * queues). Then we sleep until a handoff message on our process channel (the release script
 * granted it to us), a "re-check" message (after a reconnect), the holder's ttl, RECHECK_MS or the
 * signal's abort; a failed attempt is retried with jittered backoff. A message only wakes us: the
 * 're-check' attempt that follows confirms the grant on the server (and re-dates it, so its
 * validity counts from that attempt), and its token is the server's. Resolves
 * `{ acquired: false }` once the signal aborts, after leaving the queue.
 *
 * The first attempt does not read `request.signal`: the engine makes its AbortController only when
 * the signal is read, and an uncontended grant never needs it (an abort during that attempt is the
 * same race as one arriving just after it, which the engine handles by giving the grant back).
 *
 * Not an async function: a grant at the first attempt (the uncontended case) is answered from one
 * `.then`, without the frame of the wait loop (about 600 bytes per acquire); anything else
 * continues in `waitLoop` with that first attempt's outcome. The waiter registers for handoffs
 * only there: a handoff that arrives before (the release script ran between our queueing and our
 * reading of its reply) waits for it in RedisHandoffs (see `expect`), so a grant at the first
 * attempt touches no table.
 */
export function queuedWait(
  steps: QueuedWaitSteps,
  request: BackendAcquireRequest,
  phase: Phase,
): Promise<BackendAcquireResult> {
  const sentAt = performance.now();
  let first: Promise<unknown>;
  try {
    first = steps.attempt(request, phase, Math.max(1, Math.ceil(request.wait)));
  } catch (error) {
    first = Promise.reject(error);
  }
  const more = () => waitLoop(steps, request, phase, sentAt, first);
  return first.then((answer) => {
    try {
      const reply = steps.reply(answer);
      if (reply[0] !== 1) return more();
      const granted = steps.granted(request, reply[1], sentAt);
      if (!(granted instanceof Promise)) return granted;
      // Replica acknowledgements: their failure is a failed attempt, which the loop retries.
      return granted.then(undefined, (error: unknown) =>
        failed(steps, request, phase, sentAt, error),
      );
    } catch (error) {
      return failed(steps, request, phase, sentAt, error);
    }
  }, more);
}

/** The wait loop after a first attempt that failed with `error`. */
function failed(
  steps: QueuedWaitSteps,
  request: BackendAcquireRequest,
  phase: Phase,
  sentAt: number,
  error: unknown,
): Promise<BackendAcquireResult> {
  return waitLoop(steps, request, phase, sentAt, Promise.reject(error));
}

/**
 * The rest of a queued wait, from its first attempt's outcome (`pending`, already sent at
 * `sentAt`): see queuedWait.
 */
async function waitLoop(
  steps: QueuedWaitSteps,
  request: BackendAcquireRequest,
  phase: Phase,
  sentAt: number,
  pending: Promise<unknown> | undefined,
): Promise<BackendAcquireResult> {
  // The handoff state lives in one object (no closure, and nothing of this frame captured). A
  // handoff that came before this registration is delivered by it (see queuedWait).
  const waiter = new Waiter();
  steps.handoffs.expect(request.owner, waiter);
  const deadline = sentAt + request.wait;
  let failure: unknown;
  let backoff = 10;
  let last: { acquired: false; retryAfter?: number } | undefined;
  try {
    for (;;) {
      if (!pending) {
        if (request.signal.aborted) break;
        // A handoff message only wakes us: anyone who can PUBLISH could have sent it. The
        // re-check attempt confirms the grant on the server and answers the server's token.
        if (waiter.take()) phase = 'recheck';
      }
      let sleep: number;
      try {
        if (!pending) {
          sentAt = performance.now();
          pending = steps.attempt(request, phase, Math.max(1, Math.ceil(deadline - sentAt)));
        }
        // Cleared before the await: a failed attempt must not be awaited again.
        const p = pending;
        pending = undefined;
        const reply = steps.reply(await p);
        failure = undefined;
        backoff = 10;
        // Only a first attempt that did not grant leads here: every grant of the loop waited.
        if (reply[0] === 1) {
          const granted = await steps.granted(request, reply[1], sentAt);
          return granted.acquired ? { ...granted, waited: true } : granted;
        }
        last = busy(reply);
        if (phase === 'try') {
          // The first wait of this backend: subscribe before queueing, so a handoff is never
          // announced before we listen (the server would take us for gone and skip us).
          await steps.subscribe();
          phase = 'wait';
          continue;
        }
        phase = 'recheck';
        sleep = recheckAfter(last);
      } catch (error) {
        failure = error;
        if (steps.final?.(error)) break;
        // The client says the server is down (connection refused, host unknown): waiting out the
        // deadline would only delay the same answer. A brief drop while connected still retries.
        if (error instanceof RedisConnectionDownError) break;
        if (phase === 'wait') phase = 'recheck';
        sleep = Math.random() * backoff;
        backoff = Math.min(backoff * 2, 500);
      }
      if (request.signal.aborted) break;
      if (waiter.handed) continue;
      await pause(request, sleep, waiter);
    }
  } finally {
    steps.handoffs.forget(request.owner, waiter);
  }
  return giveUp(steps, request, deadline, failure, last);
}

/** A wait that ends ungranted: leaves the queue, then answers busy or throws its last failure. */
async function giveUp(
  steps: QueuedWaitSteps,
  request: BackendAcquireRequest,
  deadline: number,
  failure: unknown,
  last: { acquired: false; retryAfter?: number } | undefined,
): Promise<BackendAcquireResult> {
  await leave(steps, request, deadline);
  if (failure !== undefined) throw asUnavailable(failure, steps.name, request.key);
  return last ?? { acquired: false };
}

/** When a busy waiter re-checks: just after the holder's ttl, and at least every RECHECK_MS. */
function recheckAfter(last: { retryAfter?: number }): number {
  return Math.min(RECHECK_MS, last.retryAfter === undefined ? RECHECK_MS : last.retryAfter + 1);
}

/** A wait's handoff state: whether a handoff named us, and how to wake its sleep. */
class Waiter implements HandoffWaiter {
  handed = false;
  wake: (() => void) | undefined = undefined;

  /** A message's token is not read: a message is a reason to re-check, never a grant. */
  deliver(token: string): void {
    if (token) this.handed = true;
    this.wake?.();
  }

  /** Whether a handoff named us since the last call (a handoff is taken once). */
  take(): boolean {
    const handed = this.handed;
    this.handed = false;
    return handed;
  }
}

/** Sleeps `ms`, until the signal aborts, or until the waiter is woken (a handoff or a re-check). */
function pause(request: BackendAcquireRequest, ms: number, waiter: Waiter): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', done);
      waiter.wake = undefined;
      resolve();
    };
    const timer = setTimeout(done, ms);
    request.signal.addEventListener('abort', done, { once: true });
    waiter.wake = done;
  });
}

/**
 * A waiter gave up: leave the queue (and give back a grant that raced with it), briefly awaited.
 */
async function leave(
  steps: QueuedWaitSteps,
  request: BackendAttempt,
  deadline: number,
): Promise<void> {
  const leaving = steps.leaveScript(request);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'late'>(
    (resolve) => (timer = setTimeout(() => resolve('late'), LEAVE_WAIT_MS)),
  );
  const outcome = await Promise.race([
    leaving.then(
      () => 'left' as const,
      () => 'failed' as const,
    ),
    timedOut,
  ]);
  clearTimeout(timer);
  if (outcome !== 'left') {
    // It may never arrive: a grant handed to us later is given back when its message comes.
    steps.handoffs.abandon(
      request,
      Math.max(0, deadline - performance.now()) + request.ttl + 1_000,
      () => void steps.leaveScript(request).catch(() => undefined),
    );
    // Its failure is covered: a late grant is given back through `abandon`, and the queue entry
    // ends at its deadline (the server skips it then).
    leaving.catch(() => undefined);
  }
}
