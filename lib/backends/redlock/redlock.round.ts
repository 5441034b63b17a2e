/**
 * One Redlock round over the masters: the acquire attempt (a majority grants within the validity
 * budget, else it withdraws), the withdraw every release and failed attempt runs, and the timing
 * (drift allowance, round timeout) and error they share. RedlockBackend (redlock.backend.ts) owns
 * the masters, the options and the per-wait round state; these functions hold no state.
 */
import { holderData } from '../../backend-kit/holder-data';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireRequest,
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
} from '../../interfaces/lock-backend.interface';
import { ACQUIRE, lockKeys, RELEASE, runScript, UNMARK } from '../redis-client';
import type { Masters, Round } from './redlock.masters';
import type { ResolvedRedlockOptions } from './redlock.options';
import { gather, tally, type Outcome } from './redlock.quorum';

/**
 * ms a waiter's mark lives after its attempt (plus retryJitter): the engine re-attempts within its
 * 1 s fallback (a release's wake comes sooner), a round within 0.5 s.
 */
const MARK_MS = 2_000;

/** How long past the wait deadline a round may run; below the core's DEADLINE_GRACE_MS. */
const ROUND_TAIL_MS = 50;

/**
 * One round on every master: granted, busy (with when to retry) or unavailable (no majority
 * answered).
 */
export async function attemptRound(
  o: ResolvedRedlockOptions,
  name: string,
  processChannel: string,
  m: Masters,
  request: BackendAttempt,
  round: Round,
): Promise<BackendAcquireResult> {
  if (m.duplicate) throw m.duplicate;
  const args = acquireArgs(o, processChannel, m, request);
  const n = m.clients.length;
  const q = m.quorum;
  const startedAt = performance.now();
  // After the validity budget a grant is useless. When the caller gives up (deadline or cancel),
  // the round still runs ROUND_TAIL_MS, so a cancelled waiter usually learns the truth (busy or
  // not) and withdraws what it got; no round outlives the deadline by more than that.
  const timeout = roundTimeout(o, request.ttl);
  const tail = new AbortController();
  let tailTimer: NodeJS.Timeout | undefined;
  const onAbort = () => (tailTimer = setTimeout(() => tail.abort(), ROUND_TAIL_MS));
  if (request.signal.aborted) onAbort();
  else request.signal.addEventListener('abort', onAbort, { once: true });
  const outcomes = await gather(
    n,
    (i) => track(m, i, runScript(m.clients[i], ACQUIRE, 9, args(i))),
    // Early when the answer is certain: a majority granted, or a majority said busy. Failures alone
    // do not end the round, so "busy" and "unreachable" are told apart by real answers. A master
    // that let the last round time out (frozen, partitioned) counts as "busy" while it stays
    // silent, so a split vote that only it could settle ends now instead of at every timeout.
    (o) => {
      const c = tally(o, granted);
      const suspects = o.filter((x, i) => x === undefined && m.silent[i]).length;
      return c.yes >= q || c.no + suspects > n - q;
    },
    timeout,
    tail.signal,
  );
  request.signal.removeEventListener('abort', onAbort);
  clearTimeout(tailTimer);
  const elapsed = performance.now() - startedAt;
  const c = tally(outcomes, granted);
  if (elapsed >= timeout) outcomes.forEach((o, i) => (m.silent[i] ||= o === undefined));
  round.split = c.yes > 0 && c.yes < q;
  // Redlock's validity, ttl - elapsed - drift, is counted from now.
  const validity = Math.floor(request.ttl - elapsed - drift(o, request.ttl));
  if (c.yes >= q && validity > 0) {
    const fencingToken = highestToken(outcomes);
    // The engine dates validity from sentAt (this round's start): from there it is elapsed + (ttl -
    // elapsed - drift).
    return {
      acquired: true,
      fencingToken,
      validity: Math.floor(elapsed) + validity,
      sentAt: startedAt,
    };
  }
  // Not ours: withdraw from every master at once, including the silent ones (a late grant there
  // runs before our release on the same connection).
  await withdraw(o, m, request);
  if (c.yes >= q) {
    throw new LockBackendUnavailableError(
      name,
      `a majority granted the lock but only after ${Math.round(elapsed)} ms, which with the drift allowance of ${drift(o, request.ttl)} ms leaves no validity of ttl ${request.ttl} ms`,
      { key: request.key },
    );
  }
  if (c.answered < q) throw unavailable(name, m, 'acquire', c, request.key, timeout);
  return { acquired: false, retryAfter: retryAfter(o, m, outcomes, c.yes) };
}

/** Whether one master's answer to ACQUIRE is a grant (`[1, token]`). */
function granted(r: unknown): boolean {
  return Array.isArray(r) && r[0] === 1;
}

/** The ACQUIRE script's arguments for master `i` (its KEYS first). */
function acquireArgs(
  o: ResolvedRedlockOptions,
  processChannel: string,
  m: Masters,
  request: BackendAttempt,
): (i: number) => (string | number)[] {
  const k = lockKeys(request.key);
  // An attempt of a wait registers this process where its subscription is live, so the next
  // release there wakes it (and only one process). The score orders processes the same way on
  // every master, so they tend to wake the same one.
  const wait = (request as Partial<BackendAcquireRequest>).wait ?? 0;
  const score = Date.now();
  // A waiter's mark outlives its next attempt: the engine's fallback pause, the jittered start and
  // a round (each bounded by a second at most), and a margin. The engine's last attempt, at the
  // deadline, comes after the waiter gave up and took its marks back: it sets none.
  const mark = wait > 0 && !request.signal.aborted ? MARK_MS + o.retryJitter : 0;
  return (i: number) => [
    k.writer,
    k.readers,
    k.fence,
    k.queue,
    k.holder,
    k.holders,
    k.writersWaiting,
    k.readersWaiting,
    k.readPhase,
    request.owner,
    request.ttl,
    request.mode,
    o.fenceRetention,
    wait > 0 && m.subscriptions?.live(i) ? processChannel : '',
    score,
    wait + 1_000,
    holderData(request.holder),
    mark,
    request.key,
  ];
}

/** The fencing token of a granted round: the highest token among the masters that granted. */
function highestToken(outcomes: readonly Outcome<unknown>[]): bigint {
  let fencingToken = 0n;
  for (const o of outcomes) {
    if (o?.ok && granted(o.value)) {
      const token = BigInt((o.value as [number, string | number])[1]);
      if (token > fencingToken) fencingToken = token;
    }
  }
  return fencingToken;
}

/**
 * Owner-checked release on every master at once; resolves with how many answered. A holder's
 * release (`done`) also takes back the marks its wait left on masters that were busy for it while
 * the others granted; a failed attempt's withdraw keeps them (it waits on).
 */
export async function withdraw(
  o: ResolvedRedlockOptions,
  m: Masters,
  lock: BackendLock,
  done = false,
) {
  const k = lockKeys(lock.key);
  const args = [
    k.writer,
    k.readers,
    k.queue,
    k.holders,
    k.writersWaiting,
    k.readersWaiting,
    k.readPhase,
    lock.owner,
    lock.mode,
    lock.key,
    done ? 1 : 0,
  ];
  // Done once a majority answered: the rest are on their way (or expire by ttl), and a frozen
  // minority must not make every release wait for the round timeout.
  const outcomes = await gather(
    m.clients.length,
    (i) => runScript(m.clients[i], RELEASE, 7, args),
    (o) => tally(o, () => true).yes >= m.quorum,
    roundTimeout(o, lock.ttl),
  );
  return tally(outcomes, () => true);
}

/**
 * A waiter that gave up takes its mark off every master (else it lapses by itself); never rejects:
 * a master that missed it lets the mark lapse.
 */
export async function unmark(o: ResolvedRedlockOptions, m: Masters, request: BackendAttempt) {
  const k = lockKeys(request.key);
  const args = [
    k.writer,
    k.queue,
    k.writersWaiting,
    k.readersWaiting,
    k.readPhase,
    request.owner,
    request.mode,
    request.key,
  ];
  await gather(
    m.clients.length,
    (i) => runScript(m.clients[i], UNMARK, 5, args),
    (o) => tally(o, () => true).yes >= m.quorum,
    roundTimeout(o, request.ttl),
  );
}

/** Any answer (even an error) from master `i` shows it is not frozen. */
function track<T>(m: Masters, i: number, call: Promise<T>): Promise<T> {
  call.then(
    () => (m.silent[i] = false),
    () => (m.silent[i] = false),
  );
  return call;
}

/**
 * ms until a majority may be free: our own grants (withdrawn) count as free, busy masters free up
 * at their PTTL.
 */
function retryAfter(
  o: ResolvedRedlockOptions,
  m: Masters,
  outcomes: readonly Outcome<unknown>[],
  free: number,
): number | undefined {
  const needed = m.quorum - free;
  // a split vote: the others withdraw now (and the retry is jittered)
  if (free > 0) return o.retryJitter;
  const pttls = outcomes
    .map((o) => (o?.ok && Array.isArray(o.value) ? Number(o.value[1]) : -1))
    .filter((t) => t >= 0)
    .sort((a, b) => a - b);
  return pttls.length >= needed ? pttls[needed - 1] : undefined;
}

export function drift(o: ResolvedRedlockOptions, ttl: number): number {
  return Math.ceil(ttl * o.driftFactor) + o.driftMargin;
}

function validityBudget(o: ResolvedRedlockOptions, ttl: number): number {
  return Math.max(1, ttl - drift(o, ttl));
}

/**
 * How long one round waits for silent masters: `timeout`, or by default ttl/10 (Redlock: small
 * against the ttl), from 100 to 500 ms.
 */
export function roundTimeout(o: ResolvedRedlockOptions, ttl: number): number {
  const wanted = o.timeout ?? Math.min(500, Math.max(100, Math.round(ttl / 10)));
  return Math.min(wanted, validityBudget(o, ttl));
}

export function unavailable(
  name: string,
  m: Masters,
  what: string,
  c: { answered: number; failed: number; silent: number; firstError: unknown },
  key: string,
  timeout: number,
  tail = '',
) {
  return new LockBackendUnavailableError(
    name,
    `${what}: only ${c.answered} of ${m.clients.length} masters answered, a majority of ${m.quorum} is needed; ${c.failed} failed, ${c.silent} gave no answer within ${timeout} ms${tail}`,
    { key, cause: c.firstError },
  );
}
