import { holderData } from '../../backend-kit/holder-data';
import { MAX_DURATION_MS } from '../../backend-kit/limits';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type {
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
  BackendWaitPolicy,
  ElectionBackend,
  LockBackend,
  LockBackendCapabilities,
  LockInspection,
  SemaphoreBackend,
} from '../../interfaces/lock-backend.interface';
import { checkEtcdClient, type EtcdClientLike } from './etcd.client';
import { announceHolder, withHolders } from './etcd.holders';
import { deleteHolders, holdersOf, inspection, listHeld, readContenders } from './etcd.inspect';
import { etcdLockPrefix, etcdSemaphorePrefix } from './etcd.keys';
import { deletePermitHolders, readPermits, permitInspection } from './etcd.permits';
import { renewHeld } from './etcd.renew';
import { EtcdSemaphores } from './etcd.semaphore';
import { checkEtcdOptions, type EtcdLockBackendOptions } from './etcd.options';
import { QueueWatches } from './etcd.queue-watch';
import { EtcdSession } from './etcd.session';
import { LocalQueue, type LocalQueueContext } from './etcd.local-queue';

export {
  DEFAULT_ETCD_CALL_TIMEOUT_MS,
  DEFAULT_ETCD_SESSION_TTL_MS,
  type EtcdLockBackendOptions,
} from './etcd.options';

/**
 * etcd locks with the layout of `etcdctl lock NAME` and Go's concurrency.Mutex, so Go services,
 * etcdctl and this module exclude each other on one NAME.
 *
 * Algorithm: one session lease per backend, kept alive at TTL/3; lock NAME's contender is
 * `NAME/<lease hex>` on that lease (owners of one process queue locally for it, see LocalQueue).
 * Acquire is one transaction (create our key, read the youngest contenders); the oldest contender
 * holds, the others each watch only their predecessor and re-read after it goes (no herd).
 * tryAcquire is the same transaction, and deletes the key again when it does not hold.
 *
 * Safety: etcd orders contenders by create revision (linearizable, cluster-wide); a key dies with
 * the lease of the process that made it; a holder learns the loss of its lease from local time
 * alone (EtcdSession counts validity from the keepalive's send time, minus drift), and a renewal
 * checks in one transaction that each held key still exists as the key we created (same create
 * revision). Fencing token = our key's create revision: every new grant is a new key, and etcd's
 * revision only grows. Shared mode marks reader keys with the value `shared`; a reader holds when
 * no older contender is a writer.
 */
export class EtcdLockBackend implements LockBackend {
  readonly name = 'etcd';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: true,
    maxKeyLength: 512,
  };
  /** A queued waiter is woken by news of its place (LocalQueue.step); a timer would add nothing. */
  readonly waitPolicy: BackendWaitPolicy = { fallbackDelay: MAX_DURATION_MS };
  readonly sessionTtl: number;
  readonly prefix: string;
  private client: EtcdClientLike | undefined;
  private creating: Promise<EtcdClientLike> | undefined;
  private readonly factory: (() => unknown) | undefined;
  private readonly callTimeout: number;
  private readonly queues = new Map<string, LocalQueue>();
  private readonly ctx: LocalQueueContext;
  private readonly semaphores: EtcdSemaphores;
  private readonly watches = new QueueWatches(() => this.live?.client ?? this.client);
  private live: EtcdSession | undefined;
  private granting: Promise<EtcdSession> | undefined;
  /** Who holds this backend's locks (the first attempt's holder data), written once per session. */
  private holder = '';
  private closed = false;
  private readonly now = () => performance.now();

  constructor(options: EtcdLockBackendOptions) {
    const o = checkEtcdOptions(options);
    if (o.client !== undefined) this.client = checkEtcdClient(o.client);
    this.factory = o.clientFactory;
    this.sessionTtl = o.sessionTtl;
    this.callTimeout = o.callTimeout;
    this.prefix = o.prefix;
    this.ctx = {
      backend: this.name,
      callTimeout: o.callTimeout,
      recheckInterval: o.sessionTtl,
      watches: this.watches,
      session: (key) => this.session(key),
      idle: (queue) => {
        if (this.queues.get(queue.fullKey) === queue && queue.empty)
          this.queues.delete(queue.fullKey);
      },
    };
    this.semaphores = new EtcdSemaphores({
      backend: this.name,
      prefix: o.prefix,
      callTimeout: o.callTimeout,
      recheckInterval: o.sessionTtl,
      session: (key) => this.session(key),
    });
  }

  /**
   * Health of the session, without a request: 'idle' (no session yet), 'healthy', 'unhealthy'
   * (alive, but keepalives have gone unanswered for two periods: etcd may be unreachable),
   * 'lost' (the lease ended; the next acquire grants a new one) or 'closed'.
   */
  get sessionState(): 'idle' | 'healthy' | 'unhealthy' | 'lost' | 'closed' {
    if (this.closed) return 'closed';
    if (!this.live) return 'idle';
    if (!this.live.alive) return 'lost';
    return this.live.healthy ? 'healthy' : 'unhealthy';
  }

  /**
   * One real round trip for a health check: a linearizable count of one key, which etcd answers
   * only with a leader and a quorum. Rejects with LockBackendUnavailableError otherwise.
   */
  async ping(): Promise<void> {
    try {
      const client = await this.clientFor();
      await client.kv.range(
        { key: Buffer.from(`${this.prefix}\u0000ping`), count_only: true },
        { deadline: Date.now() + this.callTimeout },
      );
    } catch (error) {
      if (error instanceof LockBackendUnavailableError || error instanceof InvalidLockOptionsError)
        throw error;
      throw new LockBackendUnavailableError(this.name, 'etcd did not answer a ping', {
        cause: error,
      });
    }
  }

  /**
   * Who holds `key` and who waits, from the lock's prefix (one range read). Holders are named by
   * their session lease (etcd stores no owner token); fencingToken is the youngest holder's
   * create revision; waiters are the contenders behind the holders.
   */
  async inspect(key: string): Promise<LockInspection> {
    const client = await this.clientFor();
    const deadline = Date.now() + this.callTimeout;
    const lockPrefix = Buffer.from(etcdLockPrefix(key, this.prefix));
    const lock = inspection(key, await readContenders(client, lockPrefix, deadline));
    if (lock.held) return withHolders(client, this.prefix, lock, deadline);
    const permits = await readPermits(
      client,
      Buffer.from(etcdSemaphorePrefix(key, this.prefix)),
      deadline,
    );
    return permits.length > 0 ? permitInspection(key, permits) : lock;
  }

  /**
   * Deletes the holders' keys of `key`, whoever they are (each only at the create revision read, so
   * a newer grant is never hit). The next contender is granted at once; a holder of another process
   * learns the loss at its next renewal (ttl/3), one of this backend at once.
   */
  async forceRelease(key: string): Promise<boolean> {
    const client = await this.clientFor();
    const lockPrefix = Buffer.from(etcdLockPrefix(key, this.prefix));
    const deadline = Date.now() + this.callTimeout;
    const holders = holdersOf(await readContenders(client, lockPrefix, deadline));
    const deleted = await deleteHolders(client, holders, deadline);
    const queue = this.queues.get(key);
    for (const h of holders) queue?.lost('it was force-released by an operator', undefined, h.rev);
    // A semaphore of the key: every permit that holds.
    const permitPrefix = Buffer.from(etcdSemaphorePrefix(key, this.prefix));
    const freed = await deletePermitHolders(client, permitPrefix, deadline);
    for (const permit of this.semaphores.heldUnder(key))
      if (freed.has(permit.rev))
        this.semaphores.lost(permit, 'it was force-released by an operator');
    return deleted > 0 || freed.size > 0;
  }

  /**
   * Full keys under `prefix` held now (a lock, election or semaphore with any contender), at most
   * `limit`: keys-only range reads of the prefix, skipping past each NAME's queue (bounded by
   * `limit`, not by queue lengths).
   */
  async list(prefix: string, limit: number): Promise<string[]> {
    const client = await this.clientFor();
    return listHeld(client, this.prefix, prefix, limit, Date.now() + this.callTimeout);
  }

  /**
   * The lease id (decimal string) of the current live session, if any: what `etcdctl lease list`
   * shows in hex.
   */
  get sessionLeaseId(): string | undefined {
    return this.live?.alive ? this.live.id : undefined;
  }

  /**
   * One attempt, as Go's Mutex.TryLock: create our key and read the contenders in one txn; when
   * an older contender blocks us, delete the key again and answer busy. With wait, the request
   * stays queued (locally, then on etcd's revision order) between the engine's attempts, and the
   * busy answer's wake tells the engine when there is news (LocalQueue.step).
   */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.queueFor(request);
  }

  /** A waiter that gave up leaves its queue; its key is deleted when nobody else rides it. */
  async leave(request: BackendAttempt): Promise<void> {
    await this.queues.get(request.key)?.leave(request.owner);
  }

  /** Native semaphores: permits under the key's semaphore prefix (etcd.semaphore.ts). */
  readonly semaphore: SemaphoreBackend = {
    tryAcquire: (request, permits) => this.permitFor(request, permits),
    leave: (request) => this.semaphores.leave(request.owner),
    renew: (permits) => renewHeld(permits, this.queues, this.semaphores, this.callTimeout, true),
    release: (permit) => this.semaphores.release(permit),
  };

  /** Campaigns laid out as concurrency.Election: the proposal is the value of our key. */
  readonly election: ElectionBackend = {
    tryAcquire: (request, proposal) => this.queueFor(request, proposal),
    leave: (request) => this.leave(request),
  };

  private permitFor(request: BackendAttempt, permits: number): Promise<BackendAcquireResult> {
    if (this.closed) return Promise.reject(this.closedError(request.key));
    try {
      etcdLockPrefix(request.key, this.prefix);
    } catch (error) {
      return Promise.reject(error);
    }
    this.holder ||= holderData(request.holder);
    return this.semaphores.attempt(request, permits);
  }

  private closedError(key: string): LockBackendUnavailableError {
    return new LockBackendUnavailableError(this.name, 'the backend was closed', {
      key,
      final: true,
    });
  }

  private queueFor(request: BackendAttempt, proposal?: string): Promise<BackendAcquireResult> {
    if (this.closed) return Promise.reject(this.closedError(request.key));
    this.holder ||= holderData(request.holder);
    if (request.mode !== 'exclusive' && request.mode !== 'shared')
      return Promise.reject(
        new InvalidLockOptionsError('mode', request.mode, `'exclusive' or 'shared'`, request.key),
      );
    let queue = this.queues.get(request.key);
    if (!queue) {
      let lockPrefix: Buffer;
      try {
        lockPrefix = Buffer.from(etcdLockPrefix(request.key, this.prefix));
      } catch (error) {
        return Promise.reject(error);
      }
      queue = new LocalQueue(request.key, lockPrefix, this.ctx);
      this.queues.set(request.key, queue);
    }
    return request.wait ? queue.step(request, proposal) : queue.tryOnce(request, proposal);
  }

  /**
   * Locks live as long as the session; renewal verifies, in one transaction for the whole batch,
   * that each key still exists as the key we created (same create revision). A missing key is a
   * lost lock.
   */
  renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    return renewHeld(locks, this.queues, this.semaphores, this.callTimeout);
  }

  async release(lock: BackendLock): Promise<void> {
    await this.queues.get(lock.key)?.release(lock.owner);
  }

  /**
   * Fails waiting acquires and revokes the session lease (its keys go with it). Closes the client
   * only when the backend created it (clientFactory); never a client you passed.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const queue of this.queues.values()) queue.close();
    this.watches.close();
    // A grant that failed left no session to close; its error went to the acquire that asked.
    const session = this.live ?? (await this.granting?.catch(() => undefined));
    await session?.close();
    if (this.factory) {
      // A factory that failed left no client to close; its error went to the call that asked.
      const owned = this.client ?? (await this.creating?.catch(() => undefined));
      try {
        owned?.close?.();
      } catch {
        // already closed
      }
    }
  }

  /** The client: yours, or the one clientFactory made (created once, on first use). */
  private clientFor(): Promise<EtcdClientLike> {
    if (this.client) return Promise.resolve(this.client);
    const factory = this.factory as () => unknown;
    this.creating ??= (async () => {
      const made = await factory();
      const client = checkEtcdClient(made, 'clientFactory');
      if (this.closed) {
        client.close?.();
        throw new LockBackendUnavailableError(this.name, 'the backend was closed');
      }
      this.client = client;
      return client;
    })().catch((error: unknown) => {
      this.creating = undefined;
      throw error;
    });
    return this.creating;
  }

  private session(key?: string): Promise<EtcdSession> {
    if (this.closed)
      return Promise.reject(
        new LockBackendUnavailableError(this.name, 'the backend was closed', { key }),
      );
    if (this.live?.alive) return Promise.resolve(this.live);
    this.granting ??= this.clientFor()
      .then((client) => EtcdSession.grant(client, this.sessionTtl, this.callTimeout, this.now))
      .then(
        async (session) => {
          this.granting = undefined;
          if (this.closed) {
            await session.close();
            throw new LockBackendUnavailableError(this.name, 'the backend was closed');
          }
          this.live = session;
          // Not awaited: the acquire that made the session does not wait for it (etcd.holders.ts).
          if (this.holder)
            announceHolder(
              session.client,
              this.prefix,
              session,
              this.holder,
              Date.now() + this.callTimeout,
            ).catch(() => undefined);
          return session;
        },
        (error: unknown) => {
          this.granting = undefined;
          if (error instanceof InvalidLockOptionsError) throw error;
          throw new LockBackendUnavailableError(
            this.name,
            "could not create an etcd session lease (is etcd reachable at the client's hosts?)",
            { key, cause: error },
          );
        },
      );
    return this.granting;
  }
}
