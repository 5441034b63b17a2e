import { randomBytes } from 'node:crypto';
import type {
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  BackendWaitPolicy,
  LockBackend,
  LockBackendCapabilities,
  LockInspection,
} from '../../interfaces/lock-backend.interface';
import { heldOn, RedisSubscriber, type RedisClientLike } from '../redis-client';
import { RECHECK_MS, RedisGrants } from './redis.grants';
import { inspectLock } from './redis.operator';
import { RedisHandoffs } from './redis.handoffs';
import { listRedisKeys } from './redis.list';
import { acquireAllInOneScript } from './redis.multi-key';
import { RedisSemaphore } from './redis.semaphore';
import {
  resolveRedisOptions,
  type RedisLockBackendOptions,
  type ResolvedRedisOptions,
} from './redis.options';

export type { RedisLockBackendOptions } from './redis.options';
export type { RedisClientLike } from '../redis-client';

/**
 * Redis (standalone, Sentinel-managed or Cluster) locks with a fair queue and direct handoff.
 *
 * Algorithm: an attempt is ONE script (uncontended: SET NX PX + fence INCR). A waiter that finds
 * the lock busy is queued in the same script, in arrival order with a deadline, in a sorted set
 * beside the lock (one hash slot). Release is one owner-checked script that, when anyone waits,
 * grants the lock to the queue's head (a writer, or every reader up to the next writer) in the same
 * step and PUBLISHes "owner|token" on that waiter's process channel. The message only wakes the
 * waiter (anyone who can PUBLISH could send one): it confirms the grant with one script, whose
 * token is the server's. Waiters re-check on the server when their holder's ttl ends, after a
 * reconnect, and every few seconds.
 *
 * Safety: every compare-and-act (grant, handoff, renew, release) is one atomic script on one
 * primary; a handed-off grant is dated from before the waiter's last request (or re-confirmed by a
 * renewal), so a holder never counts on more than the server keeps. Waiters that died or timed out
 * are skipped by deadline, and on a standalone primary at once (PUBLISH reached nobody: the grant
 * is undone and the next waiter served). Tokens are max(last + 1, server µs), strictly growing.
 * With asynchronous replication a failover can lose a grant; `replicas` (WAIT) narrows that window.
 * Locks and semaphores (`permits`) share one grant rule with a holder limit (exclusive 1, shared:
 * the writer only, N permits), one script set and one set of calls (redis.grants.ts); a semaphore's
 * holders are a permit set. A key array is taken in one script when its keys share a server
 * (redis.multi-key.ts).
 */
export class RedisLockBackend implements LockBackend {
  readonly name = 'redis';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: 512,
  };
  /** Queued waiters re-check on the server at least every RECHECK_MS (see RedisGrants). */
  readonly waitPolicy: BackendWaitPolicy = { fallbackDelay: RECHECK_MS };
  private readonly o: ResolvedRedisOptions;
  private readonly subscriber: RedisSubscriber | undefined;
  private readonly handoffs: RedisHandoffs;
  /** This backend's own channel: handoffs to its waiters arrive here. */
  private readonly processChannel: string;
  /** The lock's calls (redis.grants.ts); the semaphore's are the same over its permit set. */
  private readonly locks: RedisGrants;
  /** Native semaphores, sharing this backend's client, channel and handoff table. */
  readonly semaphore: RedisSemaphore;

  constructor(options: RedisLockBackendOptions) {
    this.o = resolveRedisOptions(options);
    this.processChannel = `${this.o.channel}:${randomId()}`;
    // Giving back a grant nobody waits for is best effort: if it fails, the grant expires by its
    // ttl and the queued waiters re-check at that moment (their retryAfter is the holder's PTTL).
    this.handoffs = new RedisHandoffs((lock) => void this.release(lock).catch(() => undefined));
    if (this.o.notifications) {
      this.subscriber = new RedisSubscriber(
        () => this.o.source.get(),
        [this.processChannel],
        (channel, message) => {
          if (channel === this.processChannel) this.handoffs.onMessage(message);
        },
        () => this.handoffs.recheckAll(),
      );
    }
    const deps = {
      o: this.o,
      name: this.name,
      subscriber: this.subscriber,
      handoffs: this.handoffs,
      channel: () => (this.subscriber?.ready ? this.processChannel : ''),
    };
    this.locks = new RedisGrants(deps, false);
    this.semaphore = new RedisSemaphore(deps);
  }

  /** The client, once known (a `clientFactory` client after the first call). */
  get client(): RedisClientLike | undefined {
    return this.o.source.known;
  }

  /** One attempt; a request that may wait is queued when busy (see RedisGrants.tryAcquire). */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.locks.tryAcquire(request);
  }

  /** A waiter that gave up leaves the queue (see RedisGrants.leave). */
  leave(request: BackendAttempt): Promise<void> {
    return this.locks.leave(request);
  }

  /** Every key of a multi-key grant in one script when they share a server (redis.multi-key.ts). */
  async tryAcquireAll(requests: readonly BackendAttempt[]): Promise<BackendAcquireResult[] | null> {
    if (this.o.replicas) return null;
    return acquireAllInOneScript(await this.o.source.get(), requests, this.o.fenceRetention);
  }

  renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    return this.locks.renew(locks);
  }

  release(lock: BackendLock): Promise<void> {
    return this.locks.release(lock);
  }

  /** Holder(s) with owner and remaining ttl, the last fencing token, and the queued waiters. */
  async inspect(key: string): Promise<LockInspection> {
    const permits = await this.semaphore.inspect(key);
    if (permits) return permits;
    return inspectLock(this.o, key);
  }

  /**
   * Frees `key` whoever holds it and serves the queue's head; the old holder learns at its next
   * renewal.
   */
  async forceRelease(key: string): Promise<boolean> {
    // Only a lock's shape is freed: with keyPrefix '' another app's `{name}` is not ours.
    if (!(await heldOn(await this.o.source.get(), [key]))[0]) return false;
    const permits = await this.semaphore.forceRelease(key);
    return (await this.locks.forceRelease(key)) || permits;
  }

  /** Keys under `prefix` held now: SCAN (every Cluster master), bounded (redis.list.ts). */
  list(prefix: string, limit: number): Promise<string[]> {
    return listRedisKeys(this.o, prefix, limit);
  }

  async close(): Promise<void> {
    this.subscriber?.close();
    this.handoffs.recheckAll();
    await this.o.source.close();
  }
}

function randomId(): string {
  return randomBytes(8).toString('hex');
}
