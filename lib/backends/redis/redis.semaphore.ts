import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
  LockInspection,
  SemaphoreBackend,
} from '../../interfaces/lock-backend.interface';
import {
  runScript,
  runScriptBatch,
  runScriptThen,
  runScriptThenWait,
  type RedisClientLike,
  type RedisClientSource,
  type RedisSubscriber,
} from '../redis-client';
import { attemptReply, busy, clusterAcks, isReplicasUnmet, type Phase } from './redis.commands';
import { RecentMarks } from './redis.recent-marks';
import type { RedisHandoffs } from './redis.handoffs';
import { queuedWait, type QueuedWaitSteps } from './redis.queued-wait';
import {
  SEM_ACQUIRE,
  SEM_FORCE_RELEASE,
  SEM_INSPECT,
  SEM_RELEASE,
  SEM_RENEW,
  SEM_SEAT_FREE,
  semaphoreKeys,
} from './redis.semaphore-scripts';

/**
 * What the semaphore borrows from its RedisLockBackend (one client, one channel, one handoff
 * table).
 */
export interface RedisSemaphoreDeps {
  readonly source: RedisClientSource;
  readonly subscriber: RedisSubscriber | undefined;
  readonly handoffs: RedisHandoffs;
  /** This backend's process channel (handoffs to its waiters arrive there). */
  readonly channel: string;
  readonly fenceRetention: number;
  /** The `replicas` option (undefined without it). */
  readonly replicas: { readonly count: number; readonly timeout: number } | undefined;
  /** WAIT on a single primary for the configured replicas after a grant or renewal. */
  readonly replicated: (what: string, key: string) => Promise<void>;
  /** Throws the "only N of M" error when `acked` falls short (Cluster: the WAIT went with it). */
  readonly checkAcks: (what: string, key: string, acked: number) => void;
}

/**
 * Native semaphores of the Redis backend (its `semaphore` extension): the seats of key K are a
 * sorted set `{K}:s` of owner -> expiry (server ms; a sole uncontended seat `inf`, expiring with
 * the set: "Clockless seats" in redis.semaphore-scripts.ts) beside the lock's keys, in its hash
 * slot. An attempt is one script: purge expired seats, grant when fewer than the request's own N
 * hold and nobody is queued ahead, else queue (arrival order, with a deadline). Release and
 * forceRelease grant the freed seats to the head waiters in the same script and PUBLISH each grant
 * on the waiter's process channel, through the lock's handoff table: one freed seat wakes one
 * waiter, who confirms the grant with one script (a message only wakes). Every grant gets its own
 * INCR of the key's fence, so tokens grow per grant. Renewals are owner-checked and batched in one
 * pipeline per watchdog tick. An uncontended acquire is the short SEM_SEAT_FREE script (see
 * attempt), an uncontended release a plain ZREM (see release).
 */
export class RedisSemaphore implements SemaphoreBackend {
  /** What the shared queued wait calls back, built once. */
  private readonly steps: QueuedWaitSteps;
  /** Keys whose release found a marked seat lately (see release). */
  private readonly contendedKeys = new RecentMarks();
  /** Keys whose first attempt found a seat held or a waiter lately (see attempt). */
  private readonly busyKeys = new RecentMarks();

  constructor(private readonly d: RedisSemaphoreDeps) {
    this.steps = {
      name: 'redis',
      handoffs: d.handoffs,
      attempt: (request, phase, waitMs) => this.attempt(request, phase, waitMs, 1),
      reply: attemptReply,
      granted: (request, token, sentAt) => this.granted(request, token, sentAt),
      subscribe: async () => void (await d.subscriber?.ensure().catch(() => undefined)),
      leaveScript: (request) => this.releaseScript(request, '1'),
      final: isReplicasUnmet,
    };
  }

  async tryAcquire(request: BackendAttempt, permits: number): Promise<BackendAcquireResult> {
    const sentAt = performance.now();
    const reply = attemptReply(await this.attempt(request, 'try', 0, permits));
    if (reply[0] !== 1) return busy(reply);
    return this.granted(request, reply[1], sentAt);
  }

  /**
   * A queued wait (redis.queued-wait.ts); resolves `{ acquired: false }` once the signal aborts.
   */
  acquire(request: BackendAcquireRequest, permits: number): Promise<BackendAcquireResult> {
    const steps: QueuedWaitSteps = {
      ...this.steps,
      attempt: (r, phase, waitMs) => this.attempt(r, phase, waitMs, permits),
    };
    // Subscribe before queueing, so a handoff is never announced before we listen.
    if (!this.d.subscriber?.ready)
      return steps.subscribe().then(() => queuedWait(steps, request, 'wait'));
    return queuedWait(steps, request, 'wait');
  }

  /**
   * Owner-checked renewals of many seats: one pipelined round trip (concurrent calls on Cluster).
   */
  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const calls = locks.map((l) => [semaphoreKeys(l.key).seats, l.owner, l.ttl]);
    const client = await this.d.source.get();
    const replicas = this.d.replicas;
    if (replicas && client.isCluster) {
      // Each renewal with its own WAIT on its node's connection (runScriptThenWait).
      const acked = await Promise.all(
        calls.map((args) => runScriptThenWait(client, SEM_RENEW, 1, args, replicas)),
      );
      acked.forEach(([r, n], i) => Number(r) === 1 && this.d.checkAcks('renewal', locks[i].key, n));
      return acked.map(([r]) => Number(r) === 1);
    }
    const replies = client.isCluster
      ? await Promise.all(calls.map((args) => runScript(client, SEM_RENEW, 1, args)))
      : await runScriptBatch(client, SEM_RENEW, 1, calls);
    const results = replies.map((r) => Number(r) === 1);
    if (replicas && results.some(Boolean)) await this.d.replicated('renewal', locks[0].key);
    return results;
  }

  /**
   * One `ZREM S owner`: when it frees the seat, nobody was queued (a seat is marked while anyone
   * is: see "Marked seats" in redis.semaphore-scripts.ts), so nobody is owed it. When it answers 0
   * (a marked seat, or one already gone), the release script, which serves the queue. A key whose
   * release found its seat marked within the last CONTENDED_MS goes to the script at once: under
   * contention most seats are marked, and the ZREM would be a wasted round trip.
   */
  release(lock: BackendLock): Promise<void> {
    const client = this.d.source.current;
    if (!client?.zrem || this.contendedKeys.has(lock.key))
      return this.releaseScript(lock, '0') as Promise<unknown> as Promise<void>;
    return client.zrem(semaphoreKeys(lock.key).seats, lock.owner).then((freed) => {
      if (Number(freed) === 1) return;
      this.contendedKeys.mark(lock.key);
      // The reply (1 if a seat of ours was freed) is nobody's business here.
      return this.releaseScript(lock, '0') as Promise<unknown> as Promise<void>;
    });
  }

  /** The semaphore view of `key`, or undefined when no seat is held and nobody waits for one. */
  async inspect(key: string): Promise<LockInspection | undefined> {
    const k = semaphoreKeys(key);
    const client = await this.d.source.get();
    const [flat, fence, queued] = (await runScript(client, SEM_INSPECT, 3, [
      k.seats,
      k.fence,
      k.queue,
    ])) as [string[], string | null, number];
    if (flat.length === 0 && Number(queued) === 0) return undefined;
    const holders = Array.from({ length: flat.length / 2 }, (_, i) => ({
      mode: 'exclusive' as const,
      owner: flat[2 * i],
      remainingTtl: Math.max(0, Math.ceil(Number(flat[2 * i + 1]))),
    }));
    return {
      key,
      held: holders.length > 0,
      mode: holders.length > 0 ? 'exclusive' : undefined,
      holders,
      fencingToken: fence ? BigInt(fence) : undefined,
      waiters: Number(queued),
    };
  }

  /** Frees every seat of `key` and serves its queue; resolves true when a seat was held. */
  async forceRelease(key: string): Promise<boolean> {
    const k = semaphoreKeys(key);
    const client = await this.d.source.get();
    const args = [k.seats, k.fence, k.queue, k.details, this.d.fenceRetention, probe(client)];
    return Number(await runScript(client, SEM_FORCE_RELEASE, 4, args)) > 0;
  }

  /**
   * One attempt, its integer answer (attemptReply); not async: no layer of its own. A first
   * attempt ('wait' or 'try') on a key not found busy within CONTENDED_MS runs SEM_SEAT_FREE,
   * which only seats when no seat is held and nobody is queued (the uncontended case); when it
   * answers 0 the key is remembered as busy and SEM_ACQUIRE runs, which serves every case. So a
   * key in steady contention costs a process the extra round trip about once per CONTENDED_MS.
   */
  private attempt(
    request: BackendAttempt,
    phase: Phase,
    waitMs: number,
    permits: number,
  ): Promise<unknown> {
    const client = this.d.source.current;
    if (!client)
      return Promise.resolve(this.d.source.get()).then(() =>
        this.attempt(request, phase, waitMs, permits),
      );
    const k = semaphoreKeys(request.key);
    if (phase === 'recheck' || this.busyKeys.has(request.key) || this.clusterReplicas(client))
      return this.fullAttempt(request, phase, waitMs, permits);
    const args = [k.seats, k.fence, k.queue, request.owner, request.ttl, this.d.fenceRetention];
    return runScriptThen(client, SEM_SEAT_FREE, 3, args, (answer) => {
      if (typeof answer === 'string') return answer;
      this.busyKeys.mark(request.key);
      return this.fullAttempt(request, phase, waitMs, permits);
    });
  }

  /** The SEM_ACQUIRE script (every case: seat, queue, re-check). */
  private fullAttempt(
    request: BackendAttempt,
    phase: Phase,
    waitMs: number,
    permits: number,
  ): Promise<unknown> {
    const client = this.d.source.current;
    if (!client)
      return Promise.resolve(this.d.source.get()).then(() =>
        this.fullAttempt(request, phase, waitMs, permits),
      );
    const k = semaphoreKeys(request.key);
    const channel = this.d.subscriber?.ready ? this.d.channel : '';
    const args = [
      k.seats,
      k.fence,
      k.queue,
      k.details,
      request.owner,
      request.ttl,
      permits,
      this.d.fenceRetention,
      phase,
      waitMs,
      channel,
      probe(client),
      '',
    ];
    const replicas = this.clusterReplicas(client);
    if (!replicas) return runScript(client, SEM_ACQUIRE, 4, args);
    return runScriptThenWait(client, SEM_ACQUIRE, 4, args, replicas).then(([reply, acked]) => {
      clusterAcks.set(request, acked);
      return reply;
    });
  }

  /** `replicas` when the client is a Cluster client (its WAIT goes with each script). */
  private clusterReplicas(client: RedisClientLike) {
    return client.isCluster ? this.d.replicas : undefined;
  }

  /** The release script; answers 1 when a seat of ours was freed. Not async (see attempt). */
  private releaseScript(lock: BackendLock, leaving: '0' | '1'): Promise<unknown> {
    const client = this.d.source.current;
    if (!client)
      return Promise.resolve(this.d.source.get()).then(() => this.releaseScript(lock, leaving));
    const k = semaphoreKeys(lock.key);
    const args = [
      k.seats,
      k.fence,
      k.queue,
      k.details,
      lock.owner,
      'seat',
      this.d.fenceRetention,
      probe(client),
      leaving,
    ];
    return runScript(client, SEM_RELEASE, 4, args);
  }

  /**
   * The grant's result; with `replicas`, once they acknowledged it (else the seat is given back).
   */
  private granted(
    request: BackendAttempt,
    token: string | number,
    sentAt: number,
  ): BackendAcquireResult | Promise<BackendAcquireResult> {
    const result = { acquired: true, fencingToken: BigInt(token), sentAt };
    if (!this.d.replicas) return result;
    const acked = clusterAcks.get(request);
    const confirmed =
      acked === undefined
        ? this.d.replicated('grant', request.key)
        : Promise.resolve().then(() => this.d.checkAcks('grant', request.key, acked));
    return confirmed.then(
      () => result,
      async (error: unknown) => {
        await this.release(request).catch(() => undefined);
        throw error;
      },
    );
  }
}

/** Standalone primaries undo a handoff nobody received (PUBLISH reaches every subscriber there). */
function probe(client: RedisClientLike): '0' | '1' {
  return client.isCluster ? '0' : '1';
}
