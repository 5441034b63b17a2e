import { pollAcquire } from '../../backend-kit';
import { checkDuration } from '../../backend-kit';
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
import { ACQUIRE, lockKeys, RELEASE, RENEW, type RedisScript } from './redis.scripts';

/**
 * Redis (standalone, Sentinel-managed or Cluster) locks. Algorithm: acquire is ONE script call
 * (SET NX PX semantics for writers, a sorted set of expiring seats for readers, fence bump), release
 * and renew are owner-checked scripts, so every step that compares the owner and acts on it is
 * atomic on the server. Release PUBLISHes the key; waiters sleep on that notification, or until
 * the holder's PTTL that the failed acquire returned, whichever is first. Safety rests on one
 * Redis primary: with asynchronous replication a failover can lose a grant; `replicas` makes an
 * acquire wait for replica acknowledgement (WAIT) to narrow that window, Redlock or a consensus
 * backend closes it.
 */
type Reply = unknown;

/** The part of an ioredis `Redis` or `Cluster` client this backend uses. */
export interface RedisClientLike {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<Reply>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<Reply>;
  pipeline(): {
    evalsha(sha: string, numKeys: number, ...args: (string | number)[]): unknown;
    eval(script: string, numKeys: number, ...args: (string | number)[]): unknown;
    exec(): Promise<[Error | null, Reply][] | null>;
  };
  duplicate(): RedisSubscriberLike;
  wait?(numReplicas: number, timeout: number): Promise<number>;
  readonly isCluster?: boolean;
}

interface RedisSubscriberLike {
  subscribe(channel: string): Promise<unknown>;
  on(event: 'message', cb: (channel: string, message: string) => void): unknown;
  on(event: 'ready', cb: () => void): unknown;
  on(event: 'error', cb: (error: Error) => void): unknown;
  disconnect(): void;
}

export interface RedisLockBackendOptions {
  /** An ioredis Redis (standalone or Sentinel-managed) or Cluster client; you keep owning it. */
  client: RedisClientLike;
  /** Pub/sub channel that announces releases. Default 'nestjs-distributed-lock:released'. */
  channel?: string;
  /** Wake waiters by pub/sub (default true; one extra connection per backend). false = poll only. */
  notifications?: boolean;
  /** ms a key's fence counter outlives its last grant. Default 7 days. */
  fenceRetention?: number;
  /**
   * After each grant, WAIT until `count` replicas acknowledge (at most `timeout` ms); fewer acks
   * release the grant and fail the acquire with LockBackendUnavailableError.
   */
  replicas?: { count: number; timeout: number };
}

const DEFAULT_CHANNEL = 'nestjs-distributed-lock:released';
const WEEK_MS = 7 * 24 * 3600 * 1000;

export class RedisLockBackend implements LockBackend {
  readonly name = 'redis';
  readonly capabilities: LockBackendCapabilities = { shared: true, fencing: 'strict', sessionBased: false, maxKeyLength: 512 };
  private readonly client: RedisClientLike;
  private readonly channel: string;
  private readonly fenceRetention: number;
  private readonly replicas: { count: number; timeout: number } | undefined;
  private readonly notifier: ReleaseNotifier | undefined;
  private subscriber: RedisSubscriberLike | undefined;
  private subscribed: Promise<void> | undefined;
  private closed = false;

  constructor(options: RedisLockBackendOptions) {
    if (!options || typeof options !== 'object') throw new InvalidLockOptionsError('RedisLockBackend options', options, '{ client }');
    const { client } = options;
    if (!client || typeof client.evalsha !== 'function' || typeof client.eval !== 'function' || typeof client.duplicate !== 'function') {
      throw new InvalidLockOptionsError('client', client, 'an ioredis Redis or Cluster client');
    }
    this.client = client;
    this.channel = options.channel ?? DEFAULT_CHANNEL;
    if (typeof this.channel !== 'string' || this.channel.length === 0) throw new InvalidLockOptionsError('channel', this.channel, 'a non-empty string');
    this.fenceRetention = options.fenceRetention === undefined ? WEEK_MS : checkDuration('fenceRetention', options.fenceRetention, 60_000);
    if (options.replicas !== undefined) {
      const { count, timeout } = options.replicas ?? ({} as never);
      if (!Number.isInteger(count) || count < 1) throw new InvalidLockOptionsError('replicas.count', count, 'an integer >= 1');
      checkDuration('replicas.timeout', timeout, 1);
      if (client.isCluster || typeof client.wait !== 'function') throw new InvalidLockOptionsError('replicas', options.replicas, 'a standalone or Sentinel-managed ioredis client (WAIT is per primary)');
      this.replicas = { count, timeout };
    }
    if (options.notifications !== false) this.notifier = new ReleaseNotifier();
  }

  /** One attempt: the native acquire with wait 0. */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.acquire({ ...request, wait: 0 });
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    const first = await this.attempt(request);
    if (first.acquired || request.wait === 0 || request.signal.aborted) return first;
    if (this.notifier) await this.subscribe();
    // Re-attempts right away: a release announced before the subscription was live is not missed.
    return pollAcquire(request, () => this.attempt(request), { backend: this.name, notifier: this.notifier });
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    const results = await this.renewOnPrimary(locks);
    // A renewal the replica never saw is lost by a failover just like a grant: the promoted replica
    // would expire the key at the old deadline while we count on the new one. So it needs the acks too.
    if (this.replicas && results.some(Boolean)) await this.waitForReplicas('renewal', locks[0].key);
    return results;
  }

  private async renewOnPrimary(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const calls = locks.map((l) => {
      const k = lockKeys(l.key);
      return [k.writer, k.readers, l.owner, l.ttl, l.mode] as const;
    });
    if (this.client.isCluster || locks.length === 1) {
      // Cluster: keys live on different nodes; the calls go out concurrently (one round trip of latency).
      return Promise.all(calls.map((args) => this.run(RENEW, 2, args).then((r) => r === 1)));
    }
    // Standalone: one pipelined round trip for the whole batch.
    const pipe = this.client.pipeline();
    for (const args of calls) pipe.evalsha(RENEW.sha, 2, ...args);
    const replies = (await pipe.exec()) ?? [];
    const missing = replies.map((r, i) => (r[0] && /NOSCRIPT/.test(r[0].message) ? i : -1)).filter((i) => i >= 0);
    if (missing.length) {
      // Script cache was empty (first renewal, or a restarted server): one more pipeline with EVAL, which also caches it.
      const retry = this.client.pipeline();
      for (const i of missing) retry.eval(RENEW.source, 2, ...calls[i]);
      const again = (await retry.exec()) ?? [];
      missing.forEach((i, j) => (replies[i] = again[j]));
    }
    return replies.map(([error, reply]) => {
      if (error) throw error;
      return reply === 1;
    });
  }

  async release(lock: BackendLock): Promise<void> {
    const k = lockKeys(lock.key);
    await this.run(RELEASE, 2, [k.writer, k.readers, lock.owner, lock.mode, this.channel, lock.key]);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.notifier?.notifyAll();
  }

  private async attempt(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    const k = lockKeys(request.key);
    const reply = (await this.run(ACQUIRE, 3, [k.writer, k.readers, k.fence, request.owner, request.ttl, request.mode, this.fenceRetention])) as [number, string | number];
    if (reply[0] !== 1) {
      const pttl = Number(reply[1]);
      return { acquired: false, retryAfter: pttl >= 0 ? pttl : undefined };
    }
    if (this.replicas) await this.confirmReplicated(request);
    return { acquired: true, fencingToken: BigInt(reply[1]) };
  }

  /** WAIT for replica acks of the grant; too few: give the grant back and fail closed. */
  private async confirmReplicated(lock: BackendLock): Promise<void> {
    try {
      await this.waitForReplicas('grant', lock.key);
    } catch (error) {
      await this.release(lock).catch(() => undefined);
      throw error;
    }
  }

  /**
   * WAIT on our connection: it covers every write this connection sent before it (the replication
   * offset only grows), so one WAIT confirms a whole renewal batch. It blocks the connection for up
   * to `timeout` ms, which is why that should stay well below the ttl.
   */
  private async waitForReplicas(what: string, key: string): Promise<void> {
    const { count, timeout } = this.replicas as { count: number; timeout: number };
    const acked = await (this.client.wait as NonNullable<RedisClientLike['wait']>)(count, timeout);
    if (acked < count) {
      throw new LockBackendUnavailableError(this.name, `only ${acked} of ${count} required replicas acknowledged the ${what} within ${timeout} ms (option "replicas")`, { key });
    }
  }

  private subscribe(): Promise<void> {
    if (this.subscribed) return this.subscribed;
    const sub = this.client.duplicate();
    this.subscriber = sub;
    sub.on('message', (channel, message) => {
      if (channel === this.channel) this.notifier?.notify(message);
    });
    // After a reconnect, releases may have been missed: let every waiter re-attempt.
    sub.on('ready', () => this.notifier?.notifyAll());
    sub.on('error', () => undefined);
    this.subscribed = sub.subscribe(this.channel).then(
      () => undefined,
      (error) => {
        this.subscribed = undefined;
        if (!this.closed) throw error;
      },
    );
    return this.subscribed;
  }

  /** EVALSHA, falling back to EVAL once when the server has not cached the script (NOSCRIPT). */
  private async run(script: RedisScript, numKeys: number, args: readonly (string | number)[]): Promise<Reply> {
    try {
      return await this.client.evalsha(script.sha, numKeys, ...args);
    } catch (error) {
      if (error instanceof Error && /NOSCRIPT/.test(error.message)) return this.client.eval(script.source, numKeys, ...args);
      throw error;
    }
  }
}
