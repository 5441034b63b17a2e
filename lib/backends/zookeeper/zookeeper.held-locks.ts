import { toBigInt } from '../../backend-kit';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { BackendAttempt, BackendLock } from '../../interfaces/lock-backend.interface';
import { zk } from './zookeeper.client';
import { deleteUntilGone } from './zookeeper.contender';
import type { Grant, ZooKeeperLockStats } from './zookeeper.own-node';
import type { ZooKeeperContender } from './zookeeper.semaphore-nodes';
import type { ZooKeeperSession } from './zookeeper.session';

/** One granted lock of this backend. */
interface HeldLock {
  readonly id: string;
  readonly key: string;
  readonly path: string;
  readonly session: ZooKeeperSession;
  readonly onLost: (reason: string, cause?: unknown) => void;
  /**
   * Local deadline: a lock the watchdog stops renewing is deleted after its ttl, like other
   * backends' keys.
   */
  expiresAt: number;
  ended: boolean;
}

/**
 * What a ZooKeeperLockBackend holds and still has to clean up: its granted locks (node, session,
 * and a local ttl deadline: one sweep timer deletes a lock whose renewals stopped), the contenders
 * still running (so a release or close can abandon them), and the background deletes of our nodes
 * (Curator's guaranteed delete) that close() waits for. A lock ends once, through lose(): its
 * handle hears of it, and its node is deleted while its session may still live.
 */
export class ZooKeeperHeldLocks {
  private readonly heldLocks = new Map<string, HeldLock>();
  private readonly contenders = new Set<ZooKeeperContender>();
  private readonly cleanups = new Set<Promise<unknown>>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweepAt = Infinity;

  constructor(
    private readonly backend: string,
    private readonly stats: ZooKeeperLockStats,
    private readonly closed: () => boolean,
  ) {}

  /** true while `session` is disconnected and holds locks: they may or may not still be ours. */
  inDoubt(session: ZooKeeperSession | undefined): boolean {
    return (
      session?.state === 'disconnected' &&
      [...this.heldLocks.values()].some((h) => h.session === session)
    );
  }

  /**
   * One step of a contender (see OwnNode.step), known until settle() or abandon() so a release or
   * close can abandon it, also while it is queued between steps.
   */
  step(c: ZooKeeperContender): Promise<Grant | null | 'busy'> {
    this.contenders.add(c);
    return c.step();
  }

  settle(c: ZooKeeperContender): void {
    this.contenders.delete(c);
  }

  /**
   * Records a grant: the lock is lost when its node is deleted, and deleted if not renewed within
   * ttl.
   */
  hold(request: BackendAttempt, session: ZooKeeperSession, c: ZooKeeperContender, grant: Grant) {
    const heldLock: HeldLock = {
      id: heldLockId(request.key, request.owner),
      key: request.key,
      path: grant.path,
      session,
      onLost: request.onLost,
      expiresAt: performance.now() + request.ttl,
      ended: false,
    };
    this.heldLocks.set(heldLock.id, heldLock);
    c.onOwnDeleted = () => this.lose(heldLock, 'its ZooKeeper node was deleted', false);
    if (c.ownDeleted) this.lose(heldLock, 'its ZooKeeper node was deleted', false);
    this.armSweep(heldLock.expiresAt);
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    // One exists() per lock, all pipelined on the session's connection: one round trip for the
    // batch.
    return Promise.all(
      locks.map(async (lock) => {
        const h = this.heldLocks.get(heldLockId(lock.key, lock.owner));
        if (!h || h.ended) return false;
        if (!h.session.connected) {
          throw new LockBackendUnavailableError(
            this.backend,
            `disconnected from ZooKeeper: the lock is in doubt until the session (${h.session.sessionTimeout} ms) is confirmed or expires`,
            { key: lock.key },
          );
        }
        const startedAt = performance.now();
        const stat = await zk.exists(h.session.client, h.path);
        const ours = !!stat && toBigInt(stat.ephemeralOwner, this.backend) === h.session.sessionId;
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

  /** Abandons the lock's contenders in `dir` and deletes its node. */
  async release(lock: BackendLock, dir: string, permit = false): Promise<void> {
    const id = heldLockId(lock.key, lock.owner);
    for (const c of [...this.contenders])
      if (c.owner === lock.owner && c.dir === dir) this.abandon(c);
    const h = this.heldLocks.get(id);
    if (!h) return;
    this.heldLocks.delete(id);
    h.ended = true;
    if (h.session.dead) return; // the session's ephemeral nodes went with it
    try {
      // A semaphore's path too, once its `leases` and `locks` are gone (NOT_EMPTY otherwise; not
      // awaited).
      await zk.release(h.session.client, h.path, permit ? [dir] : []);
    } catch (error) {
      // Curator's "guaranteed delete": the session lives on, so no ttl will ever free this node;
      // keep deleting it in the background, after each reconnect, until it is gone or the session
      // ends.
      this.track(deleteUntilGone(h.session, h.path, this.closed));
      throw error;
    }
  }

  /**
   * `session` reconnected: watches are re-set by the driver; still, re-evaluate in case a
   * notification fell in the gap.
   */
  sessionConnected(session: ZooKeeperSession): void {
    for (const c of this.contenders) if (c.session === session) c.kick();
  }

  /**
   * Expired (or presumed so): every lock of the session is lost. When the session may still live
   * (a long disconnection), the delete is queued and runs if the same session comes back.
   */
  sessionLost(session: ZooKeeperSession, reason: string): void {
    for (const h of [...this.heldLocks.values()])
      if (h.session === session) this.lose(h, reason, !session.dead);
    if (session.dead) for (const c of this.contenders) if (c.session === session) c.kick();
  }

  /**
   * Ends everything (the backend is closing) and waits up to `boundMs` for our deletes to reach the
   * server.
   */
  async close(boundMs: number): Promise<void> {
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    for (const c of [...this.contenders]) this.abandon(c);
    for (const h of [...this.heldLocks.values()]) this.lose(h, 'the lock backend was closed', true);
    await Promise.race([
      Promise.allSettled([...this.cleanups]),
      new Promise((r) => setTimeout(r, boundMs).unref()),
    ]);
  }

  /**
   * Stops a contender (its node is given up); the node of a grant that arrives after all is deleted
   * in the background.
   */
  abandon(c: ZooKeeperContender): void {
    this.contenders.delete(c);
    this.track(
      c.finish().then(
        (grant) => (grant && !c.session.dead ? this.deleteNode(c.session, grant.path) : undefined),
        (error: unknown) => {
          // An expired session took the contender's node with it: nothing is left to clean up.
          // Any other failure may have left the node behind: track() counts it.
          if (!c.session.dead) throw error;
        },
      ),
    );
  }

  /** Ends a held lock: tells its handle (onLost) and, when asked, deletes its node. Idempotent. */
  private lose(h: HeldLock, reason: string, deleteNode: boolean): void {
    if (h.ended) return;
    h.ended = true;
    this.heldLocks.delete(h.id);
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
      if (this.closed() || session.dead) throw error;
      await deleteUntilGone(session, path, this.closed);
    }
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

  /**
   * One timer for all held locks: a lock whose renewals stopped (maxHold, lost lease) is deleted
   * after its ttl.
   */
  private armSweep(at: number): void {
    if (this.closed() || at >= this.sweepAt) return;
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
      for (const h of [...this.heldLocks.values()]) {
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

function heldLockId(key: string, owner: string): string {
  return `${owner.length}:${owner}:${key}`;
}
