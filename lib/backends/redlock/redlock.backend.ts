import { randomBytes } from 'node:crypto';
import { sleepFor } from '../../backend-kit';
import { reconnectAfterSentinelRace } from '../../backend-kit/sentinel-reconnect';
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
import { lockKeys, PubSubWakeups, quietErrors, quit, RENEW, runScriptBatch } from '../redis-client';
import {
  checkRedlockClients,
  minimumTtl,
  resolveRedlockOptions,
  type RedlockBackendOptions,
  type ResolvedRedlockOptions,
} from './redlock.options';
import { checkDistinct, type Masters, type Round } from './redlock.masters';
import { listRedlockKeys } from './redlock.list';
import { forceReleaseMasters, inspectMasters } from './redlock.operator';
import { gather, tally, type Outcome, type RedlockClientLike } from './redlock.quorum';
import { attemptRound, roundTimeout, unavailable, unmark, withdraw } from './redlock.round';
import { RedlockSubscriptions } from './redlock.subscriptions';

/**
 * Redlock over N independent Redis masters. Each attempt (`tryAcquire`; the engine runs the wait,
 * woken by releases published on every master) runs the shared one-script acquire on every master
 * at once with the same owner token; the lock is ours when a majority granted it and elapsed +
 * drift (ttl x driftFactor + driftMargin) < ttl, valid for ttl - elapsed - drift from the start.
 * Why it is safe (under Redlock's timing assumptions): two majorities of N always share a master,
 * and on that master the script grants only one owner at a time; each master expires the key by
 * itself, and we count validity from before the first request, minus the allowed drift. Renewal is
 * the owner-checked extend on every master and needs a majority too, else the lock is lost. A
 * failed attempt withdraws from every master at once. No round waits for the slowest master once
 * its outcome is certain, so a frozen or partitioned minority costs latency, never safety. Fencing
 * tokens are best-effort: the max of the granting majority's per-master tokens (each max(last + 1,
 * server time in µs)), which grow across holders only while the masters' clocks agree and their
 * fence keys survive.
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
   * clients of one server fail at startup (InvalidLockOptionsError naming both) rather than at
   * first use.
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
    // Once per backend: the run_id check (one INFO per master) should finish before the first
    // grant, so two clients of one server fail clearly instead of silently counting one master
    // twice. A frozen master must not hold up acquires, so we wait at most one round for it.
    if (!m.checked) {
      const stop = new AbortController();
      await Promise.race([m.distinct, sleepFor(roundTimeout(this.o, request.ttl), stop.signal)]);
      stop.abort();
    }
    let round = this.rounds.get(request.signal);
    if (!round) this.rounds.set(request.signal, (round = { attempts: 0, split: false }));
    const n = round.attempts++;
    if (n > 0 && (n > 2 || round.split))
      await sleepFor(Math.random() * this.o.retryJitter, request.signal);
    const wait = (request as Partial<BackendAcquireRequest>).wait ?? 0;
    if (wait > 0) {
      // A waiter marks the masters it finds busy: if it gives up, it takes the marks back.
      const r = round;
      const gaveUp = () => {
        if (r.marked) void unmark(this.o, m, request).catch(() => undefined);
      };
      if (r.marked === undefined) request.signal.addEventListener('abort', gaveUp, { once: true });
      r.marked = true; // until a grant: an attempt that fails may have marked some masters
    }
    const result = await attemptRound(this.o, this.name, this.processChannel, m, request, round);
    if (result.acquired) round.marked = false;
    return result;
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const m = await this.setup();
    const calls = locks.map((l) => {
      const k = lockKeys(l.key);
      return [k.writer, k.readers, l.owner, l.ttl, l.mode];
    });
    const timeout = Math.min(...locks.map((l) => roundTimeout(this.o, l.ttl)));
    const n = m.clients.length;
    const q = m.quorum;
    // Per lock: decided once a majority extended it, or once so many masters refused or failed that
    // no majority can.
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
      throw unavailable(this.name, m, 'renew', c, lock.key, timeout);
    });
  }

  async release(lock: BackendLock): Promise<void> {
    const m = await this.setup();
    const c = await withdraw(this.o, m, lock, true);
    if (c.answered < m.quorum)
      throw unavailable(
        this.name,
        m,
        'release',
        c,
        lock.key,
        roundTimeout(this.o, lock.ttl),
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

  /** Keys under `prefix` a majority holds: SCAN on every master, bounded (redlock.list.ts). */
  async list(prefix: string, limit: number): Promise<string[]> {
    return listRedlockKeys(await this.setup(), prefix, limit, this.o.timeout ?? 500);
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

  /**
   * The masters: given, or made once by the clientFactory (a failed call is retried at the next
   * use).
   */
  private setup(): Masters | Promise<Masters> {
    if (this.masters) return this.masters;
    return (this.making ??= (async () => {
      try {
        const factory = this.o.clientFactory as NonNullable<
          ResolvedRedlockOptions['clientFactory']
        >;
        const made = await factory();
        let clients: readonly RedlockClientLike[];
        try {
          clients = checkRedlockClients('clientFactory()', made);
        } catch (error) {
          // Refused clients are still ours: left open they would reconnect for ever.
          if (Array.isArray(made)) made.forEach((c) => (c as RedlockClientLike)?.disconnect?.());
          throw error;
        }
        clients.forEach(quietErrors); // ours: ioredis would print every reconnect's error
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
    clients.forEach(reconnectAfterSentinelRace);
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
}
