import { holderData } from '../../backend-kit/holder-data';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
} from '../../interfaces/lock-backend.interface';
import {
  RedisConnectionDownError,
  runScript,
  runScriptBatch,
  runScriptThen,
  runScriptThenWait,
  type RedisClientLike,
  type RedisSubscriber,
} from '../redis-client';
import {
  attemptReply,
  busy,
  checkAcks,
  clusterAcks,
  waitForReplicas,
  type Phase,
} from './redis.commands';
import { QueuedWaiter, type RedisHandoffs } from './redis.handoffs';
import type { ResolvedRedisOptions } from './redis.options';
import { RecentMarks } from './redis.recent-marks';
import {
  ACQUIRE,
  everyLockKey,
  FORCE_RELEASE,
  LOCK_FREE,
  lockKeys,
  RELEASE,
  RELEASE_UNQUEUED,
  RENEW,
} from './redis.scripts';
import { SEM_RENEW, SEM_PERMIT_FREE, semaphoreKeys } from './redis.semaphore-scripts';

/**
 * A queued waiter re-checks on the server at least this often (a lost message, an expired holder):
 * the backend's wait policy (fallbackDelay).
 */
export const RECHECK_MS = 5_000;
/** How long a waiter that gave up waits for its leave before resolving (the leave goes on). */
const LEAVE_WAIT_MS = 50;

const noop = (): void => undefined;

/** What the grant paths of one RedisLockBackend share: its options, channel and handoff table. */
export interface RedisGrantDeps {
  readonly o: ResolvedRedisOptions;
  /** Names the backend in errors. */
  readonly name: string;
  readonly subscriber: RedisSubscriber | undefined;
  readonly handoffs: RedisHandoffs;
  /** The channel our attempts name for a handoff: the process channel once subscribed, else ''. */
  channel(): string;
}

/**
 * The Redis backend's calls for one kind of holder, over the one script set (redis.scripts.ts):
 * locks (W, R: `semaphore` false) or a semaphore's permits (S: `semaphore` true; RedisSemaphore). A
 * request's kind is its mode, or its permits. Each kind has a short uncontended acquire (LOCK_FREE,
 * SEM_PERMIT_FREE) and release (RELEASE_UNQUEUED, a plain ZREM of an unmarked permit); a key found
 * busy or contended within the last CONTENDED_MS goes straight to the full scripts, which serve
 * every case (so a key in steady contention costs a process the extra round trip about once a
 * second). Renewals are owner-checked and batched; with `replicas`, grants and renewals wait for
 * the acks (on Cluster a WAIT goes with each script: runScriptThenWait).
 */
export class RedisGrants {
  /** Keys whose first attempt found them held or queued for lately (see attempt). */
  private readonly busyKeys = new RecentMarks();
  /** Keys whose release found waiters queued lately (see release). */
  private readonly contendedKeys = new RecentMarks();

  constructor(
    protected readonly d: RedisGrantDeps,
    private readonly semaphore: boolean,
  ) {}

  /**
   * ONE attempt (a lock's, or with `permits` a permit's). A request that may wait (wait > 0) is
   * queued by the attempt that finds the key busy (phase 'wait'), in arrival order with the wait's
   * deadline, and its busy answer carries its QueuedWaiter as `wake`: a release that grants it
   * PUBLISHes on our process channel, which only wakes it. Its later attempts re-check its place
   * ('recheck'): they confirm a handoff on the server (re-dated, with the server's token) or queue
   * it again if the server dropped it. The first attempt that may wait before our channel is live
   * makes a plain attempt ('try') while the subscription is on its way, and its wake fires once it
   * is live; attempts that come while it is on its way wait for it. A failed subscription is not an
   * error: our attempts then name no channel, and waiters re-check at the holder's ttl and every
   * RECHECK_MS. A connection known down ends the wait at once (a final error).
   */
  tryAcquire(request: BackendAttempt, permits?: number): Promise<BackendAcquireResult> {
    if (!request.wait) return this.once(request, 'try', 0, permits);
    const waiter = this.d.handoffs.waiter(request.owner) as QueuedWaiter | undefined;
    if (waiter) {
      waiter.news = false;
      return this.once(request, 'recheck', waiter.deadline, permits, waiter);
    }
    const deadline = performance.now() + request.wait;
    const subscriber = this.d.subscriber;
    if (!subscriber || subscriber.ready) return this.once(request, 'wait', deadline, permits);
    if (subscriber.opening)
      return subscriber
        .ensure()
        .catch(noop)
        .then(() => this.once(request, 'wait', deadline, permits));
    subscriber.ensure().catch(noop);
    return this.once(request, 'try', deadline, permits);
  }

  /**
   * Takes a waiter that gave up out of the queue (and gives back a grant that raced with it),
   * awaited for LEAVE_WAIT_MS at most; one that does not answer by then goes on, and a grant
   * handed to us meanwhile is given back when its message comes (RedisHandoffs.abandon).
   */
  async leave(request: BackendAttempt): Promise<void> {
    const waiter = this.d.handoffs.waiter(request.owner) as QueuedWaiter | undefined;
    if (!waiter || !this.d.handoffs.forget(request.owner)) return;
    const leaving = this.releaseScript(request, '1');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>(
      (resolve) => (timer = setTimeout(() => resolve(false), LEAVE_WAIT_MS)),
    );
    const left = await Promise.race([leaving.then(() => true, noop), late]);
    clearTimeout(timer);
    if (left) return;
    this.d.handoffs.abandon(
      request,
      Math.max(0, waiter.deadline - performance.now()) + request.ttl + 1_000,
      () => void this.releaseScript(request, '1').catch(noop),
    );
    // Covered: a late grant is given back through `abandon`, and the queue entry ends at its
    // deadline (the server skips it then).
    leaving.catch(noop);
  }

  /** One attempt in `phase` (see tryAcquire); `waiter` is the request's, once registered. */
  private async once(
    request: BackendAttempt,
    phase: Phase,
    deadline: number,
    permits?: number,
    waiter?: QueuedWaiter,
  ): Promise<BackendAcquireResult> {
    const sentAt = performance.now();
    let reply: [number, string | number];
    try {
      const waitMs = Math.max(1, Math.ceil(deadline - sentAt));
      reply = attemptReply(await this.attempt(request, phase, waitMs, permits));
    } catch (error) {
      if (!request.wait) throw error;
      // The attempt may have queued us: later attempts re-check, and giving up leaves.
      waiter ??= this.queued(request, deadline, false);
      if (!(error instanceof RedisConnectionDownError)) throw error;
      // The client says the server is down (connection refused, host unknown): waiting out the
      // deadline would only delay the same answer. A brief drop while connected still retries.
      throw new LockBackendUnavailableError(this.d.name, 'the request failed', {
        key: request.key,
        cause: error,
        final: true,
      });
    }
    if (reply[0] === 1) {
      if (waiter) this.d.handoffs.forget(request.owner);
      return this.granted(request, reply[1], sentAt);
    }
    if (!request.wait) return busy(reply);
    return { ...busy(reply), wake: waiter ?? this.queued(request, deadline, phase === 'try') };
  }

  /**
   * Registers the request's waiter (handoffs for its owner reach it); after a plain attempt, its
   * wake also fires once our channel is live, so it queues at once.
   */
  private queued(request: BackendAttempt, deadline: number, subscribing: boolean): QueuedWaiter {
    const waiter = new QueuedWaiter(deadline);
    this.d.handoffs.expect(request.owner, waiter);
    if (subscribing) void this.d.subscriber?.ensure().then(() => waiter.deliver(), noop);
    return waiter;
  }

  /** Owner-checked renewals: one pipelined round trip (concurrent calls on Cluster). */
  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const { o, name } = this.d;
    const script = this.semaphore ? SEM_RENEW : RENEW;
    const numKeys = this.semaphore ? 1 : 2;
    const calls = locks.map((l) => {
      if (this.semaphore) return [semaphoreKeys(l.key).permits, l.owner, l.ttl];
      const k = lockKeys(l.key);
      return [k.writer, k.readers, l.owner, l.ttl, l.mode];
    });
    const client = await o.source.get();
    const replicas = o.replicas;
    if (replicas && client.isCluster) {
      // Each renewal with its own WAIT on its node's connection; one too few acknowledged fails
      // the batch, as the one WAIT does on a single primary.
      const acked = await Promise.all(
        calls.map((args) => runScriptThenWait(client, script, numKeys, args, replicas)),
      );
      acked.forEach(
        ([r, n], i) => Number(r) === 1 && checkAcks(o, name, 'renewal', locks[i].key, n),
      );
      return acked.map(([r]) => Number(r) === 1);
    }
    const replies = client.isCluster
      ? await Promise.all(calls.map((args) => runScript(client, script, numKeys, args)))
      : await runScriptBatch(client, script, numKeys, calls);
    const results = replies.map((r) => Number(r) === 1);
    // A renewal the replica never saw is lost by a failover just like a grant: the promoted replica
    // would expire the hold at the old deadline while we count on the new one.
    if (replicas && results.some(Boolean)) await waitForReplicas(o, name, 'renewal', locks[0].key);
    return results;
  }

  /**
   * The short release (RELEASE_UNQUEUED; for a permit one `ZREM S owner`, which frees only an
   * unmarked permit: nobody was queued, so nobody is owed it), else the release script, which
   * serves the queue. A shared lock always runs the script.
   */
  release(lock: BackendLock): Promise<void> {
    const client = this.d.o.source.current;
    if (
      !client ||
      this.contendedKeys.has(lock.key) ||
      (this.semaphore ? !client.zrem : lock.mode !== 'exclusive')
    )
      return this.releaseScript(lock, '0') as Promise<unknown> as Promise<void>;
    // The reply (1 when the hold was ours) is nobody's business here.
    if (this.semaphore && client.zrem) {
      const freed = client.zrem(semaphoreKeys(lock.key).permits, lock.owner);
      return freed.then((n) => (Number(n) === 1 ? undefined : this.contended(lock)));
    }
    // Ours and nobody queued: 1; not ours: 0 (RELEASE would change nothing); waiters: -1.
    const k = lockKeys(lock.key);
    const args = [k.writer, k.queue, lock.owner];
    return runScriptThen(client, RELEASE_UNQUEUED, 2, args, (answer) =>
      Number(answer) >= 0 ? undefined : this.contended(lock),
    ) as Promise<unknown> as Promise<void>;
  }

  /** A release the short path could not make: the key counts as contended, the script runs. */
  private contended(lock: BackendLock): Promise<void> {
    this.contendedKeys.mark(lock.key);
    return this.releaseScript(lock, '0') as Promise<unknown> as Promise<void>;
  }

  /** Frees `key` whoever holds it and serves its queue; true when a hold was removed. */
  async forceRelease(key: string): Promise<boolean> {
    const client = await this.d.o.source.get();
    const args = [...this.keys(key), this.d.o.fenceRetention, probe(client)];
    return Number(await runScript(client, FORCE_RELEASE, args.length - 2, args)) > 0;
  }

  /**
   * One attempt, the script's own answer (attemptReply reads it); not async: no layer of its own
   * on the hot path. A first exclusive or permit attempt on a key not found busy lately runs the
   * short script, which only grants a key nobody holds or waits for; when it answers nil the key
   * is marked busy and ACQUIRE runs.
   */
  protected attempt(
    request: BackendAttempt,
    phase: Phase,
    waitMs: number,
    permits?: number,
  ): Promise<unknown> {
    const { o } = this.d;
    const client = o.source.current;
    if (!client)
      return Promise.resolve(o.source.get()).then(() =>
        this.attempt(request, phase, waitMs, permits),
      );
    if (
      phase === 'recheck' ||
      (!this.semaphore && request.mode !== 'exclusive') ||
      this.busyKeys.has(request.key) ||
      (o.replicas && client.isCluster)
    )
      return this.fullAttempt(request, phase, waitMs, permits);
    let args: (string | number)[];
    if (this.semaphore) {
      const k = semaphoreKeys(request.key);
      args = [k.permits, k.fence, k.queue, request.owner, request.ttl, o.fenceRetention];
    } else {
      const k = lockKeys(request.key);
      const { owner, ttl } = request;
      const w = holderData(request.holder);
      args = [k.writer, k.readers, k.fence, k.queue, k.holder, owner, ttl, o.fenceRetention, w];
    }
    const script = this.semaphore ? SEM_PERMIT_FREE : LOCK_FREE;
    return runScriptThen(client, script, this.semaphore ? 3 : 5, args, (answer) => {
      if (typeof answer === 'string') return answer;
      this.busyKeys.mark(request.key);
      return this.fullAttempt(request, phase, waitMs, permits);
    });
  }

  /** The ACQUIRE script (every case: grant, queue, re-check). */
  protected fullAttempt(
    request: BackendAttempt,
    phase: Phase,
    waitMs: number,
    permits?: number,
  ): Promise<unknown> {
    const { o } = this.d;
    const client = o.source.current;
    if (!client)
      return Promise.resolve(o.source.get()).then(() =>
        this.fullAttempt(request, phase, waitMs, permits),
      );
    const keys = this.keys(request.key);
    const args = [
      ...keys,
      request.owner,
      request.ttl,
      permits === undefined ? request.mode : permits,
      o.fenceRetention,
      phase,
      waitMs,
      this.d.channel(),
      probe(client),
      this.semaphore ? '' : holderData(request.holder),
    ];
    const replicas = client.isCluster ? o.replicas : undefined;
    if (!replicas) return runScript(client, ACQUIRE, keys.length, args);
    return runScriptThenWait(client, ACQUIRE, keys.length, args, replicas).then(
      ([reply, acked]) => {
        clusterAcks.set(request, acked);
        return reply;
      },
    );
  }

  /** The release script; `leaving` '1' also takes a waiter out of the queue. Not async. */
  private releaseScript(lock: BackendLock, leaving: '0' | '1'): Promise<unknown> {
    const { o } = this.d;
    const client = o.source.current;
    if (!client)
      return Promise.resolve(o.source.get()).then(() => this.releaseScript(lock, leaving));
    const keys = this.keys(lock.key);
    const args = [...keys, lock.owner, lock.mode, o.fenceRetention, probe(client), leaving];
    return runScript(client, RELEASE, keys.length, args);
  }

  /**
   * The grant's result; with `replicas`, once they acknowledged it (else the grant is given back:
   * the replicas error is what the caller must see; a failed give-back expires by its ttl).
   */
  private granted(
    request: BackendAttempt,
    token: string | number,
    sentAt: number,
  ): BackendAcquireResult | Promise<BackendAcquireResult> {
    const result = { acquired: true, fencingToken: BigInt(token), sentAt };
    const { o, name } = this.d;
    if (!o.replicas) return result;
    const acked = clusterAcks.get(request);
    const confirmed =
      acked === undefined
        ? waitForReplicas(o, name, 'grant', request.key)
        : Promise.resolve().then(() => checkAcks(o, name, 'grant', request.key, acked));
    return confirmed.then(
      () => result,
      async (error: unknown) => {
        await this.releaseScript(request, '0').catch(() => undefined);
        throw error;
      },
    );
  }

  /** The full scripts' KEYS: a lock's seven, or a semaphore's four. */
  private keys(key: string): string[] {
    if (!this.semaphore) return everyLockKey(lockKeys(key));
    const k = semaphoreKeys(key);
    return [k.permits, k.fence, k.queue, k.details];
  }
}

/** Standalone primaries undo a handoff nobody received (PUBLISH reaches every subscriber there). */
function probe(client: RedisClientLike): '0' | '1' {
  return client.isCluster ? '0' : '1';
}
