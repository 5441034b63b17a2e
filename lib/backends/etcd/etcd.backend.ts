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
import { checkEtcdClient, type EtcdClientLike } from './etcd.client';
import { etcdLockPrefix } from './etcd.keys';
import { verifyContenders } from './etcd.ops';
import { EtcdSession } from './etcd.session';
import { LockSlot, type SlotContext } from './etcd.slot';

/**
 * etcd locks with the layout of `etcdctl lock NAME` and Go's concurrency.Mutex, so Go services,
 * etcdctl and this module exclude each other on one NAME. One session lease per backend, kept
 * alive at TTL/3; lock NAME's contender is `NAME/<lease hex>` on that lease. Acquire is one
 * transaction (create our key, read the youngest contenders); the oldest contender holds, the
 * others each watch only their predecessor and re-read after it goes. Safe because etcd orders
 * contenders by create revision (linearizable, cluster-wide), a key dies with the lease of the
 * process that made it, and a holder learns the loss of its lease from local time alone (see
 * EtcdSession). Fencing token = our key's create revision: every new grant is a new key, and
 * etcd's revision only grows. Shared mode marks reader keys with the value `shared`.
 */
export interface EtcdLockBackendOptions {
  /** An etcd3 `Etcd3` client you created (not a namespace); you keep owning and closing it. */
  client: unknown;
  /**
   * TTL of the session lease in ms: how long locks of a crashed or partitioned process survive.
   * etcd leases are whole seconds and its minimum is 2 s: a multiple of 1000, >= 2000. Default 10000.
   */
  sessionTtl?: number;
  /** Prepended to every etcd key, e.g. 'locks/'. Default ''. `etcdctl lock <prefix><NAME>` interoperates. */
  prefix?: string;
  /** ms one etcd request may take before it counts as failed. Default 5000. */
  callTimeout?: number;
}

export const DEFAULT_ETCD_SESSION_TTL_MS = 10_000;
export const DEFAULT_ETCD_CALL_TIMEOUT_MS = 5_000;
const OPTIONS = new Set(['client', 'sessionTtl', 'prefix', 'callTimeout']);

export class EtcdLockBackend implements LockBackend {
  readonly name = 'etcd';
  readonly capabilities: LockBackendCapabilities = { shared: true, fencing: 'strict', sessionBased: true, maxKeyLength: 512 };
  readonly sessionTtl: number;
  readonly prefix: string;
  private readonly client: EtcdClientLike;
  private readonly callTimeout: number;
  private readonly slots = new Map<string, LockSlot>();
  private readonly ctx: SlotContext;
  private live: EtcdSession | undefined;
  private granting: Promise<EtcdSession> | undefined;
  private closed = false;
  private readonly now = () => performance.now();

  constructor(options: EtcdLockBackendOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidLockOptionsError('options', options, 'an object { client, sessionTtl?, prefix?, callTimeout? }');
    for (const name of Object.keys(options)) {
      if (!OPTIONS.has(name)) throw new InvalidLockOptionsError(name, (options as unknown as Record<string, unknown>)[name], `one of ${[...OPTIONS].join(', ')} (unknown option)`);
    }
    this.client = checkEtcdClient(options.client);
    const ttl = options.sessionTtl === undefined ? DEFAULT_ETCD_SESSION_TTL_MS : options.sessionTtl;
    if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 2_000 || ttl % 1_000 !== 0 || ttl > 1_000_000_000) {
      throw new InvalidLockOptionsError('sessionTtl', ttl, 'whole seconds in ms, at least 2000 (etcd leases are whole seconds; etcd raises shorter ones to its 2 s minimum)');
    }
    const callTimeout = options.callTimeout === undefined ? DEFAULT_ETCD_CALL_TIMEOUT_MS : options.callTimeout;
    if (typeof callTimeout !== 'number' || !Number.isInteger(callTimeout) || callTimeout < 1 || callTimeout > 600_000) {
      throw new InvalidLockOptionsError('callTimeout', callTimeout, 'an integer number of ms from 1 to 600000');
    }
    const prefix = options.prefix === undefined ? '' : options.prefix;
    if (typeof prefix !== 'string' || prefix.length > 256 || /[\u0000-\u001f\u007f]/.test(prefix)) {
      throw new InvalidLockOptionsError('prefix', prefix, 'a string of at most 256 characters without control characters');
    }
    this.sessionTtl = ttl;
    this.callTimeout = callTimeout;
    this.prefix = prefix;
    this.ctx = {
      client: this.client,
      backend: this.name,
      callTimeout,
      recheckInterval: ttl,
      session: (key) => this.session(key),
      idle: (slot) => {
        if (this.slots.get(slot.fullKey) === slot && slot.empty) this.slots.delete(slot.fullKey);
      },
    };
  }

  /** The lease id (decimal string) of the current live session, if any: what `etcdctl lease list` shows in hex. */
  get sessionLeaseId(): string | undefined {
    return this.live?.alive ? this.live.id : undefined;
  }

  /** One attempt: the native acquire with wait 0. */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.acquire({ ...request, wait: 0 });
  }

  acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    if (this.closed) return Promise.reject(new LockBackendUnavailableError(this.name, 'the backend was closed', { key: request.key }));
    if (request.mode !== 'exclusive' && request.mode !== 'shared') return Promise.reject(new InvalidLockOptionsError('mode', request.mode, `'exclusive' or 'shared'`, request.key));
    let slot = this.slots.get(request.key);
    if (!slot) {
      let lockPrefix: Buffer;
      try {
        lockPrefix = Buffer.from(etcdLockPrefix(request.key, this.prefix));
      } catch (error) {
        return Promise.reject(error);
      }
      slot = new LockSlot(request.key, lockPrefix, this.ctx);
      this.slots.set(request.key, slot);
    }
    return slot.acquire(request);
  }

  /**
   * Locks live as long as the session; renewal verifies, in one transaction for the whole batch,
   * that each key still exists as the incarnation we created. A missing key is a lost lock.
   */
  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    const results = locks.map(() => false);
    const items: { i: number; slot: LockSlot; key: Buffer; rev: bigint; leaseId: string }[] = [];
    locks.forEach((lock, i) => {
      const slot = this.slots.get(lock.key);
      const held = slot?.heldBy(lock.owner);
      // The local validity check runs before any request: a paused process finds out here, not from etcd.
      if (slot && held && held.session.alive) items.push({ i, slot, key: held.key, rev: held.rev, leaseId: held.session.id });
    });
    if (items.length === 0) return results;
    const ok = await verifyContenders(this.client, items, Date.now() + this.callTimeout);
    items.forEach((it, j) => {
      if (ok[j]) results[it.i] = true;
      else it.slot.lost('its etcd key was deleted or replaced behind its back', undefined, it.rev);
    });
    return results;
  }

  async release(lock: BackendLock): Promise<void> {
    await this.slots.get(lock.key)?.release(lock.owner);
  }

  /** Fails waiting acquires and revokes the session lease (its keys go with it). Never closes the client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const slot of this.slots.values()) slot.close();
    const session = this.live ?? (await this.granting?.catch(() => undefined));
    await session?.close();
  }

  private session(key?: string): Promise<EtcdSession> {
    if (this.closed) return Promise.reject(new LockBackendUnavailableError(this.name, 'the backend was closed', { key }));
    if (this.live?.alive) return Promise.resolve(this.live);
    this.granting ??= EtcdSession.grant(this.client, this.sessionTtl, this.callTimeout, this.now).then(
      async (session) => {
        this.granting = undefined;
        if (this.closed) {
          await session.close();
          throw new LockBackendUnavailableError(this.name, 'the backend was closed');
        }
        this.live = session;
        return session;
      },
      (error) => {
        this.granting = undefined;
        throw new LockBackendUnavailableError(this.name, 'could not create an etcd session lease (is etcd reachable at the client\'s hosts?)', { key, cause: error });
      },
    );
    return this.granting;
  }
}
