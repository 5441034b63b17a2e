import { raceAbort, toBigInt, WAIT_DEADLINE } from '../../backend-kit';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type {
  BackendAcquireRequest,
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
  LockInspection,
} from '../../interfaces/lock-backend.interface';
import { errorCode, ERR_SESSION_EXPIRED, zk, type ZooKeeperClientLike } from './zookeeper.client';
import { ZooKeeperOperations } from './zookeeper.operations';
import { Contender, deleteUntilGone, type ZooKeeperLockStats } from './zookeeper.contender';
import { SemaphoreContender } from './zookeeper.semaphore';
import type { ZooKeeperContender } from './zookeeper.semaphore-nodes';
import { driverAcl, type ZooKeeperAuthInfo } from './zookeeper.acl';
import {
  checkOptions,
  checkZooKeeperClient,
  type ZooKeeperLockBackendOptions,
} from './zookeeper.options';
import {
  KAZOO_LOCK_NAME,
  KAZOO_READ_LOCK_NAME,
  LATCH_NAME,
  lockDirectory,
  MUTEX_LOCK_NAME,
  nodePrefix,
  protectedId,
  READ_LOCK_NAME,
  WRITE_LOCK_NAME,
  type CuratorRecipe,
  type NodeNames,
} from './zookeeper.nodes';
import { ZooKeeperSession, type SessionState } from './zookeeper.session';

/** One granted lock of this backend. */
interface Holding {
  readonly id: string;
  readonly key: string;
  readonly path: string;
  readonly session: ZooKeeperSession;
  readonly onLost: (reason: string, cause?: unknown) => void;
  /** Local deadline: a lock the watchdog stops renewing is deleted after its ttl, like other backends' keys. */
  expiresAt: number;
  ended: boolean;
}

const ABORTED = Symbol('aborted');

/**
 * ZooKeeper locks in Apache Curator's layout (InterProcessMutex / InterProcessReadWriteLock), so
 * Java services using Curator and this module exclude each other on the same path.
 *
 * Algorithm: each contender owns one EPHEMERAL_SEQUENTIAL node under `<basePath>/<encoded key>`
 * (Curator's `_c_<id>-lock-<seq>`); the server's sequence orders them; a contender holds when
 * Curator's predicate says so (mutex/writer: first; reader: no writer before it) and otherwise
 * watches exactly one node (no herd). tryAcquire creates the node, lists the directory once and
 * deletes the node again when it does not hold.
 *
 * Safety comes from ZooKeeper itself: creates are totally ordered and an ephemeral node lives
 * exactly as long as its session, so two holders can never both see themselves first. We lose a
 * lock when our node is deleted, our session expires, or the connection stays down longer than
 * the session timeout (then we can no longer know). Fencing token = our node's czxid: zxids only
 * grow, even when the directory is deleted and recreated.
 *
 * Leader-election campaigns (capabilities.election) are Curator LeaderLatch participants: the
 * node is `_c_<uuid>-latch-<seq>` in the campaign's directory with the proposal as its data
 * (LeaderLatch's participant id); the lowest sequence leads, the others watch their predecessor.
 * With nodeNames 'kazoo' they are kazoo Election contenders instead (`__lock__`, proposal as data).
 * kazoo's `__lock__`/`__rlock__` nodes are contenders in every directory, whatever nodeNames says.
 * Semaphores (`permits`) are Curator's InterProcessSemaphoreV2: a `locks` mutex guards acquisition,
 * one `leases` node per holder, granted while at most the request's own N exist (SemaphoreContender).
 */
export class ZooKeeperLockBackend implements LockBackend {
  readonly name = 'zookeeper';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: true,
    maxKeyLength: 512,
    election: true,
    semaphore: true,
  };
  /** Counters for monitoring and tests. */
  readonly stats: ZooKeeperLockStats = {
    watchNotifications: 0,
    sessions: 0,
    cleanupFailures: 0,
    ownWatchFailures: 0,
  };
  readonly basePath: string;
  readonly curatorRecipe: CuratorRecipe;
  readonly nodeNames: NodeNames;
  private session: ZooKeeperSession | undefined;
  private readonly userClient: ZooKeeperClientLike | undefined;
  private readonly factory: ZooKeeperLockBackendOptions['clientFactory'];
  private readonly expectedTimeout: number | undefined;
  private readonly acl: readonly unknown[] | undefined;
  private readonly authInfo: readonly ZooKeeperAuthInfo[];
  private readonly holdings = new Map<string, Holding>();
  private readonly contenders = new Set<ZooKeeperContender>();
  private readonly cleanups = new Set<Promise<unknown>>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweepAt = Infinity;
  private readonly operations = new ZooKeeperOperations(
    this.name,
    () => this.basePath,
    (key) => this.currentSession(key),
  );
  private closed = false;

  constructor(options: ZooKeeperLockBackendOptions) {
    const o = checkOptions(options);
    this.basePath = o.basePath;
    this.curatorRecipe = o.curatorRecipe;
    this.nodeNames = o.nodeNames;
    this.userClient = o.client;
    this.factory = o.clientFactory;
    this.expectedTimeout = o.sessionTimeout;
    this.acl = o.acl ? driverAcl(o.acl) : undefined;
    this.authInfo = o.authInfo;
    if (this.userClient) this.session = this.newSession(this.userClient, false);
  }

  /** 'connected', or the reason the locks of this backend are in doubt ('disconnected') or gone ('expired'). */
  get connectionState(): SessionState {
    return this.session?.state ?? (this.closed ? 'closed' : 'connecting');
  }

  /** true while the connection is down and locks are held: they may or may not still be ours. */
  get inDoubt(): boolean {
    return (
      this.session?.state === 'disconnected' &&
      [...this.holdings.values()].some((h) => h.session === this.session)
    );
  }

  /**
   * One real round trip for a health check (exists('/') on the session), bounded by the session
   * timeout; rejects with LockBackendUnavailableError when not connected. connectionState and
   * inDoubt answer without a request.
   */
  ping(): Promise<void> {
    return this.operations.ping();
  }

  /**
   * Who holds `key` and who waits, from one listing of its directory (Curator's predicates decide
   * the holders); holders are named by node and protected id; fencingToken is the youngest
   * holder's czxid; waiters are the nodes behind the holders.
   */
  inspect(key: string): Promise<LockInspection> {
    return this.operations.inspect(key);
  }

  /**
   * Held full keys under `prefix` (at most `limit`, in key order), from one getChildren of
   * basePath and one pipelined getChildren per candidate directory (batches of 64). Fails when
   * basePath's listing does not fit one ZooKeeper response (jute.maxbuffer); directories not named
   * by our key encoding are skipped. See listHeld.
   */
  list(prefix: string, limit: number): Promise<string[]> {
    return this.operations.list(prefix, limit);
  }

  /** Deletes the holder nodes of `key`, whoever created them; their holders see the loss at once (node watch). */
  forceRelease(key: string): Promise<boolean> {
    return this.operations.forceRelease(key);
  }
  /** One attempt: create our node, list the directory once; not first: delete it, busy. */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.contend(request, true);
  }

  /** Queued wait in the directory's sequence order, bounded by request.signal. */
  acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    return this.contend(request, request.wait === 0);
  }

  private async contend(request: BackendAttempt, tryOnce: boolean): Promise<BackendAcquireResult> {
    const dir = lockDirectory(this.basePath, request.key);
    const lockName = this.nodeName(request);
    const prefix = nodePrefix(protectedId(request.owner), lockName);
    const data = request.election ? Buffer.from(request.election.proposal, 'utf8') : undefined;
    for (;;) {
      const session = this.currentSession(request.key);
      if (!session.connected) {
        // A session that worked before and is down now fails fast on a try-once; otherwise wait for it within the budget.
        const ok =
          tryOnce && !session.fresh
            ? false
            : await session.whenConnected(tryOnce ? undefined : request.signal);
        if (!ok) {
          if (session.dead && this.factory && !this.closed && !request.signal.aborted) continue;
          // Cancelled by the caller during a first connect that has not failed yet: let the engine
          // throw the caller's reason. Reaching the deadline unconnected is an outage.
          if (
            session.state === 'connecting' &&
            request.signal.aborted &&
            request.signal.reason !== WAIT_DEADLINE
          )
            return { acquired: false };
          throw new LockBackendUnavailableError(
            this.name,
            `not connected to ZooKeeper (${session.lostReason ?? session.state})`,
            { key: request.key },
          );
        }
      }
      this.checkNegotiated(session, request.key);
      const contender: ZooKeeperContender =
        request.permits !== undefined
          ? new SemaphoreContender(
              session,
              dir,
              request.owner,
              request.permits,
              tryOnce,
              this.stats,
              this.acl,
            )
          : new Contender(
              session,
              dir,
              prefix,
              request.owner,
              request.mode === 'exclusive',
              tryOnce,
              this.stats,
              this.acl,
              data,
            );
      this.contenders.add(contender);
      const run = contender.run();
      let outcome: Awaited<typeof run> | typeof ABORTED;
      try {
        outcome = tryOnce ? await run : await raceAbort(run, request.signal, () => ABORTED);
      } catch (error) {
        this.contenders.delete(contender);
        const expired = session.dead || errorCode(error) === ERR_SESSION_EXPIRED;
        if (expired && this.factory && !this.closed && !request.signal.aborted) continue; // queue again on a fresh session
        throw new LockBackendUnavailableError(
          this.name,
          expired ? 'the ZooKeeper session expired while acquiring' : 'a ZooKeeper request failed',
          { key: request.key, cause: error },
        );
      }
      if (outcome === ABORTED) {
        const unanswered = contender.serverCall || !session.connected;
        this.abandon(contender, run);
        if (unanswered)
          throw new LockBackendUnavailableError(
            this.name,
            'ZooKeeper did not answer before the wait deadline',
            { key: request.key },
          );
        return { acquired: false };
      }
      this.contenders.delete(contender);
      if (!outcome) return { acquired: false };
      if (this.closed) {
        // Granted while closing: delete the node now. A failure is the error's cause (the node then
        // stays until its session ends: at once for an owned client, which close() closes).
        let cause: unknown;
        await zk.release(session.client, outcome.path).catch((e: unknown) => (cause = e));
        throw new LockBackendUnavailableError(
          this.name,
          cause === undefined
            ? 'the backend was closed'
            : 'the backend was closed, and deleting the node granted meanwhile failed',
          { key: request.key, cause },
        );
      }
      const holding: Holding = {
        id: holdingId(request.key, request.owner),
        key: request.key,
        path: outcome.path,
        session,
        onLost: request.onLost,
        expiresAt: performance.now() + request.ttl,
        ended: false,
      };
      this.holdings.set(holding.id, holding);
      contender.onOwnDeleted = () => this.lose(holding, 'its ZooKeeper node was deleted', false);
      if (contender.ownDeleted) this.lose(holding, 'its ZooKeeper node was deleted', false);
      this.armSweep(holding.expiresAt);
      return { acquired: true, fencingToken: outcome.czxid };
    }
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    // One exists() per lock, all pipelined on the session's connection: one round trip for the batch.
    return Promise.all(
      locks.map(async (lock) => {
        const h = this.holdings.get(holdingId(lock.key, lock.owner));
        if (!h || h.ended) return false;
        if (!h.session.connected) {
          throw new LockBackendUnavailableError(
            this.name,
            `disconnected from ZooKeeper: the lock is in doubt until the session (${h.session.sessionTimeout} ms) is confirmed or expires`,
            { key: lock.key },
          );
        }
        const startedAt = performance.now();
        const stat = await zk.exists(h.session.client, h.path);
        const ours = !!stat && toBigInt(stat.ephemeralOwner, this.name) === h.session.sessionId;
        if (!ours) {
          this.lose(h, 'its ZooKeeper node is gone', false);
          return false;
        }
        if (h.ended) return false;
        h.expiresAt = startedAt + lock.ttl;
        this.armSweep(h.expiresAt);
        return true;
      }),
    );
  }

  async release(lock: BackendLock): Promise<void> {
    const id = holdingId(lock.key, lock.owner);
    const dir = lockDirectory(this.basePath, lock.key);
    for (const c of [...this.contenders])
      if (c.owner === lock.owner && c.dir === dir) this.abandon(c);
    const h = this.holdings.get(id);
    if (!h) return;
    this.holdings.delete(id);
    h.ended = true;
    if (h.session.dead) return; // the session's ephemeral nodes went with it
    try {
      await zk.release(h.session.client, h.path);
      // A semaphore's path too, once its `leases` and `locks` are gone (NOT_EMPTY otherwise; not awaited).
      if (lock.permits !== undefined) h.session.client.remove(dir, -1, () => undefined);
    } catch (error) {
      // Curator's "guaranteed delete": the session lives on, so no ttl will ever free this node; keep
      // deleting it in the background, after each reconnect, until it is gone or the session ends.
      this.track(deleteUntilGone(h.session, h.path, () => this.closed));
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    for (const c of [...this.contenders]) this.abandon(c);
    for (const h of [...this.holdings.values()]) this.lose(h, 'the lock backend was closed', true);
    // Give our deletes a session timeout to reach the server; an owned client's close drops its nodes anyway.
    const bound = Math.max(this.session?.sessionTimeout ?? 0, 1_000);
    await Promise.race([
      Promise.allSettled([...this.cleanups]),
      new Promise((r) => setTimeout(r, bound).unref()),
    ]);
    const session = this.session;
    this.session = undefined;
    await session?.close();
  }

  /** Our node's name for a request: Curator's (LeaderLatch `latch-` for campaigns) or kazoo's (Election is a `__lock__` Lock). */
  private nodeName(request: BackendAttempt): string {
    if (this.nodeNames === 'kazoo')
      return request.mode === 'shared' && !request.election
        ? KAZOO_READ_LOCK_NAME
        : KAZOO_LOCK_NAME;
    if (request.election) return LATCH_NAME;
    if (request.mode === 'shared') return READ_LOCK_NAME;
    return this.curatorRecipe === 'mutex' ? MUTEX_LOCK_NAME : WRITE_LOCK_NAME;
  }

  private currentSession(key: string): ZooKeeperSession {
    if (this.closed)
      throw new LockBackendUnavailableError(this.name, 'the backend was closed', { key });
    if (this.session && !this.session.dead) return this.session;
    if (!this.factory) {
      throw new LockBackendUnavailableError(
        this.name,
        `${this.session?.lostReason ?? 'the ZooKeeper session ended'}; the client cannot be used again. Pass clientFactory so the backend opens a new session, or create a new client and backend`,
        { key },
      );
    }
    let client: ReturnType<NonNullable<ZooKeeperLockBackendOptions['clientFactory']>>;
    try {
      client = this.factory();
    } catch (error) {
      throw new LockBackendUnavailableError(this.name, 'clientFactory threw', {
        key,
        cause: error,
      });
    }
    this.session = this.newSession(checkZooKeeperClient(client, 'clientFactory'), true);
    return this.session;
  }

  private newSession(client: ZooKeeperClientLike, owned: boolean): ZooKeeperSession {
    this.stats.sessions++;
    // Before connect (the driver sends them in the handshake and after every reconnect).
    for (const a of this.authInfo)
      client.addAuthInfo?.(
        a.scheme,
        Buffer.isBuffer(a.auth) ? a.auth : Buffer.from(a.auth, 'utf8'),
      );
    return new ZooKeeperSession(client, owned, {
      connected: (s) => {
        // Watches are re-set by the driver; still, re-evaluate in case a notification fell in the gap.
        for (const c of this.contenders) if (c.session === s) c.kick();
      },
      lost: (s, reason) => {
        // Expired (or presumed so): every lock of the session is lost. When the session may still
        // live (a long disconnection), the delete is queued and runs if the same session comes back.
        for (const h of [...this.holdings.values()])
          if (h.session === s) this.lose(h, reason, !s.dead);
        if (s.dead) {
          for (const c of this.contenders) if (c.session === s) c.kick();
          if (s.owned) void s.close();
        }
      },
    });
  }

  private checkNegotiated(session: ZooKeeperSession, key: string): void {
    if (this.expectedTimeout === undefined || session.sessionTimeout === this.expectedTimeout)
      return;
    throw new InvalidLockOptionsError(
      'sessionTimeout',
      this.expectedTimeout,
      `a session timeout the server accepts unchanged: it negotiated ${session.sessionTimeout} ms (ZooKeeper clamps requests into [minSessionTimeout, maxSessionTimeout], by default 2 to 20 ticks)`,
      key,
    );
  }

  /** Ends a holding: tells its handle (onLost) and, when asked, deletes its node. Idempotent. */
  private lose(h: Holding, reason: string, deleteNode: boolean): void {
    if (h.ended) return;
    h.ended = true;
    this.holdings.delete(h.id);
    try {
      h.onLost(reason);
    } catch {
      // a listener's error must not stop the cleanup
    }
    if (deleteNode && !h.session.dead) this.track(this.deleteNode(h.session, h.path));
  }

  /**
   * Deletes one of our nodes in the background: one attempt, then (while the backend is open)
   * Curator's guaranteed delete until it is gone or its session ends, since a live session would
   * otherwise keep the node, and so the lock, forever.
   */
  private async deleteNode(session: ZooKeeperSession, path: string): Promise<void> {
    try {
      await zk.release(session.client, path);
    } catch (error) {
      if (this.closed || session.dead) throw error;
      await deleteUntilGone(session, path, () => this.closed);
    }
  }

  private abandon(c: ZooKeeperContender, run?: Promise<unknown>): void {
    this.contenders.delete(c);
    c.abandon();
    if (run)
      this.track(
        run.then(
          (grant) =>
            grant && !c.session.dead
              ? this.deleteNode(c.session, (grant as { path: string }).path)
              : undefined,
          (error: unknown) => {
            // An expired session took the contender's node with it: nothing is left to clean up.
            // Any other failure may have left the node behind: track() counts it.
            if (!c.session.dead) throw error;
          },
        ),
      );
  }

  /**
   * Keeps a background cleanup for close() to wait for. It has no caller to throw to: a failure is
   * counted in stats.cleanupFailures / stats.lastCleanupError.
   */
  private track(p: Promise<unknown>): void {
    const tracked = p
      .catch((error: unknown) => {
        this.stats.cleanupFailures = (this.stats.cleanupFailures ?? 0) + 1;
        this.stats.lastCleanupError = error;
      })
      .finally(() => this.cleanups.delete(tracked));
    this.cleanups.add(tracked);
  }

  /** One timer for all holdings: a lock whose renewals stopped (maxHold, lost lease) is deleted after its ttl. */
  private armSweep(at: number): void {
    if (this.closed || at >= this.sweepAt) return;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepAt = at;
    this.sweepTimer = setTimeout(() => this.sweep(), Math.max(0, at - performance.now()) + 1);
    this.sweepTimer.unref();
  }

  private sweep(): void {
    this.sweepTimer = undefined;
    this.sweepAt = Infinity;
    try {
      const now = performance.now();
      let next = Infinity;
      for (const h of [...this.holdings.values()]) {
        if (h.expiresAt <= now)
          this.lose(h, 'it was not renewed within its ttl, so it was deleted', true);
        else next = Math.min(next, h.expiresAt);
      }
      if (next < Infinity) this.armSweep(next);
    } catch {
      // never throw from a timer
    }
  }
}

function holdingId(key: string, owner: string): string {
  return `${owner.length}:${owner}:${key}`;
}
