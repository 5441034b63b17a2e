import { holderData } from '../../backend-kit/holder-data';
import type {
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
} from '../../interfaces/lock-backend.interface';
import {
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
  isReplicasUnmet,
  waitForReplicas,
  type Phase,
} from './redis.commands';
import type { RedisHandoffs } from './redis.handoffs';
import type { ResolvedRedisOptions } from './redis.options';
import type { QueuedWaitSteps } from './redis.queued-wait';
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
  /** What the shared queued wait (redis.queued-wait.ts) calls back, built once. */
  readonly steps: QueuedWaitSteps;
  /** Keys whose first attempt found them held or queued for lately (see attempt). */
  private readonly busyKeys = new RecentMarks();
  /** Keys whose release found waiters queued lately (see release). */
  private readonly contendedKeys = new RecentMarks();

  constructor(
    protected readonly d: RedisGrantDeps,
    private readonly semaphore: boolean,
  ) {
    this.steps = {
      name: d.name,
      handoffs: d.handoffs,
      attempt: (request, phase, waitMs) => this.attempt(request, phase, waitMs),
      reply: attemptReply,
      granted: (request, token, sentAt) => this.granted(request, token, sentAt),
      subscribe: async () => void (await d.subscriber?.ensure().catch(() => undefined)),
      leaveScript: (request) => this.releaseScript(request, '1'),
      final: isReplicasUnmet,
    };
  }

  /** ONE attempt (a lock's, or with `permits` a permit's). */
  async tryAcquire(request: BackendAttempt, permits?: number): Promise<BackendAcquireResult> {
    const sentAt = performance.now();
    const reply = attemptReply(await this.attempt(request, 'try', 0, permits));
    if (reply[0] !== 1) return busy(reply);
    return this.granted(request, reply[1], sentAt);
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
