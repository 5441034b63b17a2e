import { randomBytes } from 'node:crypto';
import { sleepFor } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireRequest,
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
  LockInspection,
} from '../../interfaces/lock-backend.interface';
import {
  ACQUIRE,
  lockKeys,
  PubSubWakeups,
  quit,
  RELEASE,
  RENEW,
  runScript,
  runScriptBatch,
} from '../redis-client';
import {
  checkRedlockClients,
  minimumTtl,
  resolveRedlockOptions,
  type RedlockBackendOptions,
  type ResolvedRedlockOptions,
} from './redlock.options';
import { checkDistinct, type Masters, type Round } from './redlock.masters';
import { forceReleaseMasters, inspectMasters } from './redlock.operator';
import { gather, tally, type Outcome, type RedlockClientLike } from './redlock.quorum';
import { RedlockSubscriptions } from './redlock.subscriptions';

/** How long past the wait deadline a round may run; below the core's DEADLINE_GRACE_MS. */
const ROUND_TAIL_MS = 50;

/**
 * Redlock over N independent Redis masters. Each attempt (`tryAcquire`; the engine runs the wait,
 * woken by releases published on every master) runs the shared one-script acquire on every master at once with the same owner token; the lock is ours when a majority granted it and
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
export class RedlockBackend implements LockBackend {
  readonly name = 'redlock';
  readonly capabilities: LockBackendCapabilities;
  /** Smallest ttl that leaves any validity after the drift allowance. */
  readonly minTtl: number;
  readonly wakeups: PubSubWakeups | undefined;
  private readonly o: ResolvedRedlockOptions;
  private masters: Masters | undefined;
  private making: Promise<Masters> | undefined;
  private closed = false;
  private readonly rounds = new WeakMap<AbortSignal, Round>();
  /** This process's wake-up channel: a release wakes one registered process, not every waiter. */
  private readonly processChannel: string;

  constructor(options: RedlockBackendOptions) {
    this.o = resolveRedlockOptions(options);
    this.processChannel = `${this.o.channel}:${randomBytes(8).toString('hex')}`;
    this.minTtl = minimumTtl(this.o.driftFactor, this.o.driftMargin);
    this.capabilities = {
      shared: true,
      fencing: 'best-effort',
      sessionBased: false,
      maxKeyLength: 512,
      minTtl: this.minTtl,
    };
    if (this.o.notifications) {
      this.wakeups = new PubSubWakeups(async () => {
        const m = await this.setup();
        await m.subscriptions?.ensure(m.quorum);
        // Not yet live on a majority: this wait polls, the next one tries again.
        const live = m.clients.filter((_, i) => m.subscriptions?.live(i)).length;
        if (live < m.quorum)
          throw new LockBackendUnavailableError(
            this.name,
            `wake-ups live on ${live} of ${m.clients.length} masters`,
          );
      });
    }
    if (this.o.clients) this.masters = this.build(this.o.clients);
  }

  /** Votes needed: a strict majority of the masters (NaN until a clientFactory has made them). */
  get quorum(): number {
    return this.masters?.quorum ?? Number.NaN;
  }

  /** The masters' clients (empty until a clientFactory has made them). */
  get clients(): readonly RedlockClientLike[] {
    return this.masters?.clients ?? [];
  }

  /**
   * Constructs and waits until every master that answers within `timeout` told its run_id, so two
   * clients of one server fail at startup (InvalidLockOptionsError naming both) rather than at first use.
   */
  static async create(options: RedlockBackendOptions): Promise<RedlockBackend> {
    const backend = new RedlockBackend(options);
    const m = await backend.setup();
    await m.distinct;
    if (m.duplicate) {
      await backend.close();
      throw m.duplicate;
    }
    return backend;
  }

  /**
   * One round on every master. Attempts after the third of one acquire call (and any after a split
   * vote) start after a random pause: waiters of several processes woken by one release try
   * together, and on N masters they can split the vote round after round unless they spread out.
   */
  async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    this.checkRequest(request);
    const m = await this.setup();
    // Once per backend: the run_id check (one INFO per master) should finish before the first grant,
    // so two clients of one server fail clearly instead of silently counting one master twice. A
    // frozen master must not hold up acquires, so we wait at most one round for it.
    if (!m.checked) {
      const stop = new AbortController();
      await Promise.race([m.distinct, sleepFor(this.roundTimeout(request.ttl), stop.signal)]);
      stop.abort();
    }
    let round = this.rounds.get(request.signal);
    if (!round) this.rounds.set(request.signal, (round = { attempts: 0, split: false }));
    const n = round.attempts++;
    if (n > 0 && (n > 2 || round.split))
      await sleepFor(Math.random() * this.o.retryJitter, request.signal);
    return this.attempt(m, request, round);
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const m = await this.setup();
    const calls = locks.map((l) => {
      const k = lockKeys(l.key);
      return [k.writer, k.readers, l.owner, l.ttl, l.mode];
    });
    const timeout = Math.min(...locks.map((l) => this.roundTimeout(l.ttl)));
    const n = m.clients.length;
    const q = m.quorum;
    // Per lock: decided once a majority extended it, or once so many masters refused or failed that no majority can.
    const counts = (outcomes: readonly Outcome<unknown[]>[], i: number) =>
      tally(
        outcomes.map((o) => (o?.ok ? { ok: true as const, value: o.value[i] } : o)),
        (r) => r === 1,
      );
    const decided = (outcomes: readonly Outcome<unknown[]>[]) =>
      locks.every((_, i) => {
        const c = counts(outcomes, i);
        return c.yes >= q || c.no > n - q;
      });
    const outcomes = await gather(
      n,
      (i) => runScriptBatch(m.clients[i], RENEW, 2, calls),
      decided,
      timeout,
    );
    return locks.map((lock, i) => {
      const c = counts(outcomes, i);
      if (c.yes >= q) return true;
      if (c.no > n - q) return false;
      throw this.unavailable(m, 'renew', c, lock.key, timeout);
    });
  }

  async release(lock: BackendLock): Promise<void> {
    const m = await this.setup();
    const c = await this.withdraw(m, lock);
    if (c.answered < m.quorum)
      throw this.unavailable(
        m,
        'release',
        c,
        lock.key,
        this.roundTimeout(lock.ttl),
        ' (the rest expire by their ttl)',
      );
  }

  /** Holders a majority of masters agree on, the largest fencing token; see redlock.operator.ts. */
  async inspect(key: string): Promise<LockInspection> {
    return inspectMasters(await this.setup(), key, this.o.timeout ?? 500);
  }

  /** Frees `key` on every master whoever holds it, and wakes one waiting process. */
  async forceRelease(key: string): Promise<boolean> {
    return forceReleaseMasters(await this.setup(), key, this.o.timeout ?? 500);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.masters?.subscriptions?.close();
    this.wakeups?.notifyAll();
    if (this.o.clientFactory && this.making) {
      // A factory that failed made no clients: nothing to close (its error reached that caller).
      const m = await this.making.catch(() => undefined);
      if (m) await Promise.all(m.clients.map((c) => quit(c)));
    }
  }

  /** The masters: given, or made once by the clientFactory (a failed call is retried at the next use). */
  private setup(): Masters | Promise<Masters> {
    if (this.masters) return this.masters;
    return (this.making ??= (async () => {
      try {
        const factory = this.o.clientFactory as NonNullable<
          ResolvedRedlockOptions['clientFactory']
        >;
        const clients = checkRedlockClients('clientFactory()', await factory());
        if (this.closed) {
          await Promise.all(clients.map((c) => quit(c)));
          throw new LockBackendUnavailableError(
            this.name,
            'the backend was closed while its clients were being made',
          );
        }
        return (this.masters = this.build(clients));
      } catch (error) {
        this.making = undefined;
        throw error;
      }
    })());
  }

  private build(clients: readonly RedlockClientLike[]): Masters {
    const wakeups = this.wakeups;
    const m: Masters = {
      clients,
      quorum: Math.floor(clients.length / 2) + 1,
      silent: clients.map(() => false),
      subscriptions: wakeups
        ? new RedlockSubscriptions(
            clients,
            [this.processChannel],
            (channel, message) => {
              if (channel === this.processChannel) wakeups.notify(message);
            },
            () => wakeups.notifyAll(),
          )
        : undefined,
      distinct: Promise.resolve(),
      checked: false,
      duplicate: undefined,
    };
    (m as { distinct: Promise<void> }).distinct = checkDistinct(m, this.o.timeout ?? 1_000);
    return m;
  }

  /** One round on every master: granted, busy (with when to retry) or unavailable (no majority answered). */
  private async attempt(
    m: Masters,
    request: BackendAttempt,
    round: Round,
  ): Promise<BackendAcquireResult> {
    if (m.duplicate) throw m.duplicate;
    const k = lockKeys(request.key);
    // An attempt of a wait registers this process where its subscription is live, so the next
    // release there wakes it (and only one process). The score orders processes the same way on
    // every master, so they tend to wake the same one.
    const wait = (request as Partial<BackendAcquireRequest>).wait ?? 0;
    const score = Date.now();
    const args = (i: number) => [
      k.writer,
      k.readers,
      k.fence,
      k.queue,
      request.owner,
      request.ttl,
      request.mode,
      this.o.fenceRetention,
      wait > 0 && m.subscriptions?.live(i) ? this.processChannel : '',
      score,
      wait + 1_000,
    ];
    const n = m.clients.length;
    const q = m.quorum;
    const granted = (r: unknown) => Array.isArray(r) && r[0] === 1;
    const startedAt = performance.now();
    // After the validity budget a grant is useless. When the caller gives up (deadline or cancel),
    // the round still runs ROUND_TAIL_MS, so a cancelled waiter usually learns the truth (busy or
    // not) and withdraws what it got; no round outlives the deadline by more than that.
    const timeout = this.roundTimeout(request.ttl);
    const tail = new AbortController();
    let tailTimer: NodeJS.Timeout | undefined;
    const onAbort = () => (tailTimer = setTimeout(() => tail.abort(), ROUND_TAIL_MS));
    if (request.signal.aborted) onAbort();
    else request.signal.addEventListener('abort', onAbort, { once: true });
    const outcomes = await gather(
      n,
      (i) => this.track(m, i, runScript(m.clients[i], ACQUIRE, 4, args(i))),
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
      return {
        acquired: true,
        fencingToken,
        validity: Math.floor(elapsed) + validity,
        sentAt: startedAt,
      };
    }
    // Not ours: withdraw from every master at once, including the silent ones (a late grant there
    // runs before our release on the same connection).
    await this.withdraw(m, request);
    if (c.yes >= q) {
      throw new LockBackendUnavailableError(
        this.name,
        `a majority granted the lock but only after ${Math.round(elapsed)} ms, which with the drift allowance of ${this.drift(request.ttl)} ms leaves no validity of ttl ${request.ttl} ms`,
        { key: request.key },
      );
    }
    if (c.answered < q) throw this.unavailable(m, 'acquire', c, request.key, timeout);
    return { acquired: false, retryAfter: this.retryAfter(m, outcomes, c.yes) };
  }

  /** Owner-checked release on every master at once; resolves with how many answered. */
  private async withdraw(m: Masters, lock: BackendLock) {
    const k = lockKeys(lock.key);
    const args = [k.writer, k.readers, k.queue, lock.owner, lock.mode, lock.key];
    // Done once a majority answered: the rest are on their way (or expire by ttl), and a frozen
    // minority must not make every release wait for the round timeout.
    const outcomes = await gather(
      m.clients.length,
      (i) => runScript(m.clients[i], RELEASE, 3, args),
      (o) => tally(o, () => true).yes >= m.quorum,
      this.roundTimeout(lock.ttl),
    );
    return tally(outcomes, () => true);
  }

  /** Any answer (even an error) from master `i` shows it is not frozen. */
  private track<T>(m: Masters, i: number, call: Promise<T>): Promise<T> {
    call.then(
      () => (m.silent[i] = false),
      () => (m.silent[i] = false),
    );
    return call;
  }

  /** ms until a majority may be free: our own grants (withdrawn) count as free, busy masters free up at their PTTL. */
  private retryAfter(
    m: Masters,
    outcomes: readonly Outcome<unknown>[],
    free: number,
  ): number | undefined {
    const needed = m.quorum - free;
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

  private checkRequest(request: BackendAttempt): void {
    if (request.ttl < this.minTtl) {
      throw new InvalidLockOptionsError(
        'ttl',
        request.ttl,
        `at least ${this.minTtl} ms for this RedlockBackend: with driftFactor ${this.o.driftFactor} and driftMargin ${this.o.driftMargin} ms a shorter ttl leaves no validity`,
        request.key,
      );
    }
  }

  private unavailable(
    m: Masters,
    what: string,
    c: { answered: number; failed: number; silent: number; firstError: unknown },
    key: string,
    timeout: number,
    tail = '',
  ) {
    return new LockBackendUnavailableError(
      this.name,
      `${what}: only ${c.answered} of ${m.clients.length} masters answered, a majority of ${m.quorum} is needed; ${c.failed} failed, ${c.silent} gave no answer within ${timeout} ms${tail}`,
      { key, cause: c.firstError },
    );
  }
}
