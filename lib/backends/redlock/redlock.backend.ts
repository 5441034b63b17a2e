import { pollAcquire, sleepFor } from '../../backend-kit';
import { ReleaseNotifier } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireRequest,
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
} from '../../interfaces/lock-backend.interface';
import { ACQUIRE, lockKeys, RELEASE, RENEW } from '../redis/redis.scripts';
import { minimumTtl, resolveRedlockOptions, runIdOf, type RedlockBackendOptions, type ResolvedRedlockOptions } from './redlock.options';
import { gather, runScript, runScriptMany, tally, type Outcome, type RedlockClientLike } from './redlock.quorum';
import { RedlockSubscriptions } from './redlock.subscriptions';

/**
 * Redlock over N independent Redis masters. Acquire runs the Redis backend's one-script acquire on
 * every master at once with the same owner token; the lock is ours when a majority granted it and
 * elapsed + drift (ttl x driftFactor + driftMargin) < ttl, valid for ttl - elapsed - drift from the
 * start. Why it is safe (under Redlock's timing assumptions): two majorities of N always share a
 * master, and on that master the script grants only one owner at a time; each master expires the
 * key by itself, and we count validity from before the first request, minus the allowed drift.
 * Renewal is the owner-checked extend on every master and needs a majority too, else the lock is
 * lost. A failed attempt withdraws from every master at once. No round waits for the slowest master
 * once its outcome is certain, so a frozen or partitioned minority costs latency, never safety. Fencing tokens are best-effort: the
 * max of the granting majority's per-master tokens (each max(last + 1, server time in µs)), which
 * grow across holders only while the masters' clocks agree and their fence keys survive.
 */
/** How long past the wait deadline a round may run; below the core's DEADLINE_GRACE_MS. */
const ROUND_TAIL_MS = 50;

export class RedlockBackend implements LockBackend {
  readonly name = 'redlock';
  readonly capabilities: LockBackendCapabilities;
  /** Votes needed: a strict majority of the masters. */
  readonly quorum: number;
  /** Smallest ttl that leaves any validity after the drift allowance. */
  readonly minTtl: number;
  private readonly o: ResolvedRedlockOptions;
  private readonly clients: readonly RedlockClientLike[];
  private readonly notifier: ReleaseNotifier | undefined;
  private readonly subscriptions: RedlockSubscriptions | undefined;
  /** Masters that let an acquire round time out and have not answered anything since. */
  private readonly silent: boolean[];
  private duplicate: InvalidLockOptionsError | undefined;
  private readonly distinct: Promise<void>;
  private checked = false;

  constructor(options: RedlockBackendOptions) {
    this.o = resolveRedlockOptions(options);
    this.clients = this.o.clients;
    this.quorum = Math.floor(this.clients.length / 2) + 1;
    this.minTtl = minimumTtl(this.o.driftFactor, this.o.driftMargin);
    this.capabilities = { shared: true, fencing: 'best-effort', sessionBased: false, maxKeyLength: 512, minTtl: this.minTtl };
    this.silent = this.clients.map(() => false);
    if (this.o.notifications) {
      this.notifier = new ReleaseNotifier();
      this.subscriptions = new RedlockSubscriptions(this.clients, this.o.channel, this.notifier);
    }
    this.distinct = this.checkDistinct();
  }

  /**
   * Constructs and waits until every master that answers within `timeout` told its run_id, so two
   * clients of one server fail at startup (InvalidLockOptionsError naming both) rather than at first use.
   */
  static async create(options: RedlockBackendOptions): Promise<RedlockBackend> {
    const backend = new RedlockBackend(options);
    await backend.distinct;
    if (backend.duplicate) {
      await backend.close();
      throw backend.duplicate;
    }
    return backend;
  }

  /** One attempt: the native acquire with wait 0. */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.acquire({ ...request, wait: 0 });
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    this.checkRequest(request);
    // Once per backend: the run_id check (one INFO per master) should finish before the first grant,
    // so two clients of one server fail clearly instead of silently counting one master twice. A
    // frozen master must not hold up acquires, so we wait at most one round for it.
    if (!this.checked) {
      const stop = new AbortController();
      await Promise.race([this.distinct, sleepFor(this.roundTimeout(request.ttl), stop.signal)]);
      stop.abort();
    }
    // The core aborts request.signal at this moment; a round still running then must end (classified)
    // before the core's short grace runs out, so no round outlives the deadline by more than ROUND_TAIL_MS.
    const deadline = request.wait > 0 ? performance.now() + request.wait : Infinity;
    const round = { split: false, retries: 0 };
    let first: BackendAcquireResult | undefined;
    try {
      first = await this.attempt(request, deadline, round);
    } catch (error) {
      // Unreachable masters are retried while the wait lasts, like a busy lock; bad configuration is not.
      if (request.wait === 0 || request.signal.aborted || error instanceof InvalidLockOptionsError) throw error;
    }
    if (first && (first.acquired || request.wait === 0 || request.signal.aborted)) return first;
    await this.subscriptions?.ensure(this.quorum, request.signal);
    // pollAcquire re-attempts once right after the subscription is live, then after each wake-up.
    // That re-attempt and the first retry after a wake-up go at once (a lone waiter takes over
    // without delay); later ones, and any after a split vote, start after a random pause. Waiters
    // woken by one release all try together; on N masters they can split the vote (or see each
    // other's partial grants as "busy") round after round unless their tries spread out.
    const retry = async () => {
      if (round.retries++ > 1 || round.split) await sleepFor(Math.random() * this.o.retryJitter, request.signal);
      return this.attempt(request, deadline, round);
    };
    return pollAcquire(request, retry, { backend: this.name, notifier: this.notifier });
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const calls = locks.map((l) => {
      const k = lockKeys(l.key);
      return [k.writer, k.readers, l.owner, l.ttl, l.mode] as const;
    });
    const timeout = Math.min(...locks.map((l) => this.roundTimeout(l.ttl)));
    const n = this.clients.length;
    const q = this.quorum;
    // Per lock: decided once a majority extended it, or once so many masters refused or failed that no majority can.
    const counts = (outcomes: readonly Outcome<unknown[]>[], i: number) => tally(outcomes.map((o) => (o?.ok ? { ok: true as const, value: o.value[i] } : o)), (r) => r === 1);
    const decided = (outcomes: readonly Outcome<unknown[]>[]) =>
      locks.every((_, i) => {
        const c = counts(outcomes, i);
        return c.yes >= q || c.no > n - q;
      });
    const outcomes = await gather(n, (m) => runScriptMany(this.clients[m], RENEW, 2, calls), decided, timeout);
    return locks.map((lock, i) => {
      const c = counts(outcomes, i);
      if (c.yes >= q) return true;
      if (c.no > n - q) return false;
      throw this.unavailable('renew', c, lock.key, timeout);
    });
  }

  async release(lock: BackendLock): Promise<void> {
    const c = await this.withdraw(lock);
    if (c.answered < this.quorum) throw this.unavailable('release', c, lock.key, this.roundTimeout(lock.ttl), ' (the rest expire by their ttl)');
  }

  async close(): Promise<void> {
    this.subscriptions?.close();
    this.notifier?.notifyAll();
  }

  /** One round on every master: granted, busy (with when to retry) or unavailable (no majority answered). */
  private async attempt(request: BackendAcquireRequest, deadline: number, round = { split: false, retries: 0 }): Promise<BackendAcquireResult> {
    if (this.duplicate) throw this.duplicate;
    const k = lockKeys(request.key);
    const args = [k.writer, k.readers, k.fence, request.owner, request.ttl, request.mode, this.o.fenceRetention];
    const n = this.clients.length;
    const q = this.quorum;
    const granted = (r: unknown) => Array.isArray(r) && r[0] === 1;
    const startedAt = performance.now();
    // After the validity budget a grant is useless. The round is not cut when the caller gives up: a
    // cancelled waiter still learns the truth (busy or not) and withdraws what it got.
    const timeout = Math.min(this.roundTimeout(request.ttl), Math.max(ROUND_TAIL_MS, deadline + ROUND_TAIL_MS - startedAt));
    const outcomes = await gather(
      n,
      (m) => this.track(m, runScript(this.clients[m], ACQUIRE, 3, args)),
      // Early when the answer is certain: a majority granted, or a majority said busy. Failures alone
      // do not end the round, so "busy" and "unreachable" are told apart by real answers. A master
      // that let the last round time out (frozen, partitioned) counts as "busy" while it stays
      // silent, so a split vote that only it could settle ends now instead of at every timeout.
      (o) => {
        const c = tally(o, granted);
        const suspects = o.filter((x, m) => x === undefined && this.silent[m]).length;
        return c.yes >= q || c.no + suspects > n - q;
      },
      timeout,
    );
    const elapsed = performance.now() - startedAt;
    const c = tally(outcomes, granted);
    if (elapsed >= timeout) outcomes.forEach((o, m) => (this.silent[m] ||= o === undefined));
    round.split = c.yes > 0 && c.yes < q;
    // Redlock's validity, ttl - elapsed - drift, is counted from now.
    const validity = Math.floor(request.ttl - elapsed - this.drift(request.ttl));
    if (c.yes >= q && validity > 0) {
      let fencingToken = 0n;
      for (const o of outcomes) {
        if (o?.ok && granted(o.value)) {
          const token = BigInt((o.value as [number, string | number])[1]);
          if (token > fencingToken) fencingToken = token;
        }
      }
      // The engine dates validity from sentAt (this round's start): from there it is elapsed + (ttl - elapsed - drift).
      return { acquired: true, fencingToken, validity: Math.floor(elapsed) + validity, sentAt: startedAt };
    }
    // Not ours: withdraw from every master at once, including the silent ones (a late grant there
    // runs before our release on the same connection).
    await this.withdraw(request);
    if (c.yes >= q) {
      throw new LockBackendUnavailableError(this.name,
        `a majority granted the lock but only after ${Math.round(elapsed)} ms, which with the drift allowance of ${this.drift(request.ttl)} ms leaves no validity of ttl ${request.ttl} ms`, { key: request.key });
    }
    if (c.answered < q) throw this.unavailable('acquire', c, request.key, timeout);
    return { acquired: false, retryAfter: this.retryAfter(outcomes, c.yes) };
  }

  /** Owner-checked release on every master at once; resolves with how many answered. */
  private async withdraw(lock: BackendLock) {
    const k = lockKeys(lock.key);
    const args = [k.writer, k.readers, lock.owner, lock.mode, this.o.channel, lock.key];
    // Done once a majority answered: the rest are on their way (or expire by ttl), and a frozen
    // minority must not make every release wait for the round timeout.
    const outcomes = await gather(this.clients.length, (m) => runScript(this.clients[m], RELEASE, 2, args), (o) => tally(o, () => true).yes >= this.quorum, this.roundTimeout(lock.ttl));
    return tally(outcomes, () => true);
  }

  /** Any answer (even an error) from master `m` shows it is not frozen. */
  private track<T>(m: number, call: Promise<T>): Promise<T> {
    call.then(() => (this.silent[m] = false), () => (this.silent[m] = false));
    return call;
  }

  /** ms until a majority may be free: our own grants (withdrawn) count as free, busy masters free up at their PTTL. */
  private retryAfter(outcomes: readonly Outcome<unknown>[], free: number): number | undefined {
    const needed = this.quorum - free;
    if (free > 0) return this.o.retryJitter; // a split vote: the others withdraw now (and the retry is jittered)
    const pttls = outcomes
      .map((o) => (o?.ok && Array.isArray(o.value) ? Number(o.value[1]) : -1))
      .filter((t) => t >= 0)
      .sort((a, b) => a - b);
    return pttls.length >= needed ? pttls[needed - 1] : undefined;
  }

  private drift(ttl: number): number {
    return Math.ceil(ttl * this.o.driftFactor) + this.o.driftMargin;
  }

  private validityBudget(ttl: number): number {
    return Math.max(1, ttl - this.drift(ttl));
  }

  /** How long one round waits for silent masters: `timeout`, or by default ttl/10 (Redlock: small against the ttl), from 100 to 500 ms. */
  private roundTimeout(ttl: number): number {
    const wanted = this.o.timeout ?? Math.min(500, Math.max(100, Math.round(ttl / 10)));
    return Math.min(wanted, this.validityBudget(ttl));
  }

  private checkRequest(request: BackendAcquireRequest): void {
    if (request.ttl < this.minTtl) {
      throw new InvalidLockOptionsError('ttl', request.ttl,
        `at least ${this.minTtl} ms for this RedlockBackend: with driftFactor ${this.o.driftFactor} and driftMargin ${this.o.driftMargin} ms a shorter ttl leaves no validity`, request.key);
    }
  }

  private unavailable(what: string, c: { answered: number; failed: number; silent: number; firstError: unknown }, key: string, timeout: number, tail = '') {
    return new LockBackendUnavailableError(this.name,
      `${what}: only ${c.answered} of ${this.clients.length} masters answered, a majority of ${this.quorum} is needed; ${c.failed} failed, ${c.silent} gave no answer within ${timeout} ms${tail}`,
      { key, cause: c.firstError });
  }

  /** Asks every master for its run_id; two clients on one server make every later call fail clearly. */
  private async checkDistinct(): Promise<void> {
    const outcomes = await gather(this.clients.length, async (m) => {
      const info = this.clients[m].info;
      return typeof info === 'function' ? runIdOf(await info.call(this.clients[m], 'server')) : undefined;
    }, () => false, this.o.timeout ?? 1_000);
    this.checked = true;
    const byId = new Map<string, number>();
    outcomes.forEach((o, m) => {
      if (!o?.ok || !o.value || this.duplicate) return;
      const first = byId.get(o.value);
      if (first !== undefined) {
        this.duplicate = new InvalidLockOptionsError(`clients[${m}]`, `run_id ${o.value}`,
          `a connection to a server other than clients[${first}] (both reach the same redis-server, which would count one master twice toward the majority)`);
      }
      byId.set(o.value, m);
    });
  }
}
