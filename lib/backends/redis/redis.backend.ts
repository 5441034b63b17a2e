import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
} from '../../interfaces/lock-backend.interface';
import {
  PubSubWakeups,
  RedisSubscriber,
  runScript,
  runScriptBatch,
  type RedisClientLike,
  type RedisScript,
} from '../redis-client';
import { resolveRedisOptions, type RedisLockBackendOptions, type ResolvedRedisOptions } from './redis.options';
import { ACQUIRE, lockKeys, RELEASE, RENEW } from './redis.scripts';

export type { RedisLockBackendOptions } from './redis.options';
export type { RedisClientLike } from '../redis-client';

/**
 * Redis (standalone, Sentinel-managed or Cluster) locks.
 *
 * Algorithm: acquire is ONE script call (SET NX PX semantics for writers, a sorted set of expiring
 * seats for readers, fence bump), release and renew are owner-checked scripts, so every step that
 * compares the owner and acts on it is atomic on the server. Release PUBLISHes the key; the
 * engine's waiters sleep on that notification (subscribed on the first wait), or until the
 * holder's PTTL that the failed acquire returned, whichever is first.
 *
 * Safety: one Redis primary decides every grant in one atomic script, and the key expires by the
 * server's clock after ttl, while the holder counts its validity from before it sent the request
 * minus a drift allowance. Fencing tokens are max(last + 1, server µs), so they grow across
 * holders, expiry and restarts. With asynchronous replication a failover can lose a grant;
 * `replicas` makes an acquire wait for replica acknowledgement (WAIT) to narrow that window,
 * Redlock or a consensus backend closes it.
 */
export class RedisLockBackend implements LockBackend {
  readonly name = 'redis';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: 512,
  };
  readonly wakeups: PubSubWakeups | undefined;
  private readonly o: ResolvedRedisOptions;
  private readonly subscriber: RedisSubscriber | undefined;

  constructor(options: RedisLockBackendOptions) {
    this.o = resolveRedisOptions(options);
    if (this.o.notifications) {
      const wakeups = new PubSubWakeups(() => (this.subscriber as RedisSubscriber).ensure());
      this.subscriber = new RedisSubscriber(
        () => this.o.source.get(),
        [this.o.channel],
        (channel, message) => {
          if (channel === this.o.channel) wakeups.notify(message);
        },
        // After a reconnect, releases may have been missed: let every waiter re-attempt.
        () => wakeups.notifyAll(),
      );
      this.wakeups = wakeups;
    }
  }

  /** The client, once known (a `clientFactory` client after the first call). */
  get client(): RedisClientLike | undefined {
    return this.o.source.current;
  }

  async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    const k = lockKeys(request.key);
    const args = [k.writer, k.readers, k.fence, request.owner, request.ttl, request.mode, this.o.fenceRetention];
    const reply = (await this.run(ACQUIRE, 3, args)) as [number, string | number];
    if (reply[0] !== 1) {
      const pttl = Number(reply[1]);
      return { acquired: false, retryAfter: pttl >= 0 ? pttl : undefined };
    }
    if (this.o.replicas) await this.confirmReplicated(request);
    return { acquired: true, fencingToken: BigInt(reply[1]) };
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const calls = locks.map((l) => {
      const k = lockKeys(l.key);
      return [k.writer, k.readers, l.owner, l.ttl, l.mode];
    });
    const client = await this.o.source.get();
    // Cluster: keys live on different nodes; the calls go out concurrently (one round trip of
    // latency). Standalone: one pipelined round trip for the whole batch.
    const replies = client.isCluster
      ? await Promise.all(calls.map((args) => runScript(client, RENEW, 2, args)))
      : await runScriptBatch(client, RENEW, 2, calls);
    const results = replies.map((r) => r === 1);
    // A renewal the replica never saw is lost by a failover just like a grant: the promoted replica
    // would expire the key at the old deadline while we count on the new one. So it needs the acks too.
    if (this.o.replicas && results.some(Boolean)) await this.waitForReplicas('renewal', locks[0].key);
    return results;
  }

  async release(lock: BackendLock): Promise<void> {
    const k = lockKeys(lock.key);
    await this.run(RELEASE, 2, [k.writer, k.readers, lock.owner, lock.mode, this.o.channel, lock.key]);
  }

  async close(): Promise<void> {
    this.subscriber?.close();
    this.wakeups?.notifyAll();
    await this.o.source.close();
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
    const { count, timeout } = this.o.replicas as { count: number; timeout: number };
    const client = await this.o.source.get();
    if (client.isCluster || typeof client.wait !== 'function') {
      throw new LockBackendUnavailableError(this.name, 'option "replicas" needs a standalone or Sentinel-managed client (WAIT is per primary)', { key });
    }
    const acked = await client.wait(count, timeout);
    if (acked < count) {
      throw new LockBackendUnavailableError(
        this.name,
        `only ${acked} of ${count} required replicas acknowledged the ${what} within ${timeout} ms (option "replicas")`,
        { key },
      );
    }
  }

  private async run(script: RedisScript, numKeys: number, args: readonly (string | number)[]): Promise<unknown> {
    const client = this.o.source.current ?? (await this.o.source.get());
    return runScript(client, script, numKeys, args);
  }
}
