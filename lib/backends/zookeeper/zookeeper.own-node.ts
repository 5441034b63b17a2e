import { sleepFor } from '../../backend-kit';
import {
  CREATE_MODE_EPHEMERAL_SEQUENTIAL,
  CREATE_MODE_PERSISTENT,
  ERR_CONNECTION_LOSS,
  ERR_NO_NODE,
  EVENT_NODE_DELETED,
  errorCode,
  zk,
  type ZooKeeperClientLike,
  type ZooKeeperEvent,
  type ZooKeeperStat,
} from './zookeeper.client';
import { lockDirs, type DirVersion } from './zookeeper.dirs';
import type { ZooKeeperSession } from './zookeeper.session';

export interface ZooKeeperLockStats {
  /**
   * Predecessor-watch notifications received (a release should wake exactly one waiting writer).
   */
  watchNotifications: number;
  /** Sessions (clients) this backend has used. */
  sessions: number;
  /**
   * Background deletes of our nodes (after a loss, an abandoned wait, close) that failed for good,
   * and the last such error: each such node stays until its session ends.
   */
  cleanupFailures?: number;
  lastCleanupError?: unknown;
  /**
   * Re-arming the watch on our own node failed; renew()'s exists() then finds a deleted node
   * instead.
   */
  ownWatchFailures?: number;
}

export interface Grant {
  readonly path: string;
  readonly czxid: bigint;
  /**
   * performance.now() when the request whose answer granted was sent: the server had heard from
   * our session by then, so it lives at least a session timeout past it (the grant's validity
   * counts from here, never from a watch event that says nothing of our session).
   */
  readonly sentAt?: number;
}

/**
 * What a lock Contender and a SemaphoreContender share: the one EPHEMERAL_SEQUENTIAL node an
 * acquire creates under `nodeDir`, named by our protected prefix (Curator's `_c_<uuid>-`) so that a
 * create whose answer was lost can be found again; the watch on it (its deletion after the grant
 * is a lost lock); the wake-up of the acquire loop; and giving the node back when the acquire ends
 * without a grant, so no orphan stays in a live session.
 */
export abstract class OwnNode {
  /** Our node, once created (or found again after a lost create answer). */
  path: string | undefined;
  abandoned = false;
  granted = false;
  /** Set by the backend after the grant; called once if our node is deleted. */
  onOwnDeleted: (() => void) | undefined;
  ownDeleted = false;
  /** The last create's answer was lost (CONNECTION_LOSS): the node may exist under our prefix. */
  protected createLost = false;
  /**
   * The directory's version in the last listing answered before our last create was sent (so
   * the server took that listing first); undefined after a recovered create or a new directory.
   */
  protected dirBefore: DirVersion | undefined;
  /** Our node's watch is set (its getData answered with our czxid). */
  protected ownWatched = false;
  /** Our node was deleted before the grant (its watch said so): we must not hold. */
  protected ownGone = false;
  /** The watch round whose first-waiter watch saw its node deleted: our turn. */
  protected turn = -1;
  /** Set by kick(): a wake-up that came while the loop was not asleep yet is not missed. */
  protected woken = false;
  /** Counts watch rounds, so a watch set in an earlier round does not wake a later one. */
  protected generation = 0;
  /** The acquire the engine steps: this one; a semaphore's for its `locks` mutex. */
  stepper: OwnNode = this;
  /** The acquire's loop (run()), once the first step started it. */
  private running: Promise<Grant | null> | undefined;
  /** Continues the loop from the sleep it handed to the engine (see step). */
  private resume: (() => void) | undefined;
  /** Ends the current step with 'busy' when the loop sleeps (see step). */
  private park: ((busy: 'busy') => void) | undefined;
  /** A kick came since the loop last slept: the next step re-evaluates. */
  private kicked = false;
  /** Ends the engine's wait on this acquire (see wait). */
  private engineWake: (() => void) | undefined;

  protected constructor(
    readonly session: ZooKeeperSession,
    protected readonly stats: ZooKeeperLockStats,
    /** The directory our node is created in. */
    private readonly nodeDir: string,
    /** Our node's name before the server's sequence: `_c_<uuid>-<lock name>`. */
    readonly prefix: string,
    /** ACL of the nodes we create (driver form), or undefined for the driver's open default. */
    protected readonly acl: readonly unknown[] | undefined,
    /** Our node's data (a campaign's proposal, a lease's participant), or none. */
    private readonly data: Buffer | undefined,
  ) {}

  /**
   * The acquire's loop: resolves the grant, or null (busy with tryOnce, or abandoned). Rejects on
   * session expiry or server errors. It never waits on its own: its sleeps go to the engine (step).
   */
  abstract run(): Promise<Grant | null>;

  /**
   * One attempt of the engine's wait: runs the acquire until it is granted (the grant), ends
   * (null) or sleeps on a watch: then it is queued, the step answers 'busy', this object is the
   * busy answer's wake (kick() ends the engine's wait), and the next step continues from that
   * sleep. A step with no kick since the sleep (the engine's timer) sends nothing: 'busy' at once.
   * Rejects as run() does.
   */
  step(): Promise<Grant | null | 'busy'> {
    if (this.resume && !this.kicked && !this.abandoned) return Promise.resolve('busy');
    const parked = new Promise<'busy'>((resolve) => (this.park = resolve));
    this.kicked = false;
    if (this.running) this.continue();
    else this.running = this.run();
    return Promise.race([this.running, parked]);
  }

  /** The engine's wait between steps: until a kick (watch, reconnect, abandon), `ms` or abort. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.kicked || this.abandoned) return Promise.resolve();
    return sleepFor(ms, signal, (wake) => (this.engineWake = wake));
  }

  /** Nothing: the acquire ends with its grant, or through finish(). */
  dispose(): void {}

  /** Wakes the acquire to re-evaluate (watch fired, reconnect, abandon). */
  kick(): void {
    this.woken = true;
    const s = this.stepper;
    s.kicked = true;
    const wake = s.engineWake;
    s.engineWake = undefined;
    wake?.();
  }

  abandon(): void {
    this.abandoned = true;
    this.kick();
  }

  /**
   * Abandons the acquire and lets a sleeping loop give its node up: the loop's outcome (a grant
   * that raced with it is the caller's to delete).
   */
  finish(): Promise<Grant | null> {
    this.abandon();
    this.continue();
    return this.running ?? Promise.resolve(null);
  }

  /** Hands the wait to the engine: the step ends 'busy', and the next one continues from here. */
  protected sleep(): Promise<void> {
    if (this.woken || this.abandoned) return Promise.resolve();
    const s = this.stepper;
    return new Promise((resolve) => {
      s.resume = resolve;
      s.kicked = false;
      const park = s.park;
      s.park = undefined;
      park?.('busy');
    });
  }

  private continue(): void {
    const resume = this.resume;
    this.resume = undefined;
    resume?.();
  }

  /**
   * Watches our own node: before the grant a change re-evaluates; after it, a deletion is a lost
   * lock.
   */
  protected readonly ownWatcher = (event: ZooKeeperEvent): void => {
    if (this.path !== event.path) return;
    if (event.type !== EVENT_NODE_DELETED) {
      // Someone set our node's data: re-arm (watches are one-shot).
      zk.watch(this.session.client, event.path, this.ownWatcher).then(
        (s) => (s ? undefined : this.ownWatcher({ type: EVENT_NODE_DELETED, path: event.path })),
        // Counted, not thrown (a watcher has no caller): without the watch a deletion of our node
        // is still found by the next renew()'s exists(), and session loss by the session state.
        () => {
          this.stats.ownWatchFailures = (this.stats.ownWatchFailures ?? 0) + 1;
        },
      );
      return;
    }
    if (!this.granted) {
      this.ownGone = true;
      return this.kick();
    }
    if (this.ownDeleted) return;
    this.ownDeleted = true;
    this.onOwnDeleted?.();
  };

  /** Sets the watch on our own node; resolves its stat (null: it is gone). */
  protected async watchOwn(c: ZooKeeperClientLike, path: string): Promise<ZooKeeperStat | null> {
    const stat = await zk.watch(c, path, this.ownWatcher);
    this.ownWatched = true;
    return stat;
  }

  /** Sets the watch on our own node after the grant, without waiting: gone = a lost lock. */
  protected watchOwnLater(c: ZooKeeperClientLike, path: string): void {
    this.ownWatched = true;
    zk.watch(c, path, this.ownWatcher).then(
      (stat) => (stat ? undefined : this.ownWatcher({ type: EVENT_NODE_DELETED, path })),
      () => {
        this.stats.ownWatchFailures = (this.stats.ownWatchFailures ?? 0) + 1;
      },
    );
  }

  /**
   * After a lost create answer: our node, found by its protected prefix, or undefined if the create
   * never happened.
   */
  protected async findLostCreate(): Promise<string | undefined> {
    const children = await zk.children(this.session.client, this.nodeDir);
    this.createLost = false;
    const mine = children?.find((child) => child.startsWith(this.prefix));
    return mine === undefined ? undefined : `${this.nodeDir}/${mine}`;
  }

  /**
   * Creates our node, or after a lost create answer first looks for it by our protected prefix.
   * Its directory is deleted when its last node goes, so unless this client knows it exists
   * (lockDirs), the directory is created first, in the same round trip: the server runs a
   * session's requests in order, so it exists when our node's create runs (NODE_EXISTS is ignored;
   * NO_NODE means a parent is missing: mkdirp, then once more; any other error fails our node's
   * create as well, and that is thrown). Every create goes out before the first await: a caller
   * may pipeline a request behind them (the listing that tells whether we hold).
   */
  protected async create(): Promise<string> {
    const c = this.session.client;
    this.dirBefore = undefined;
    if (this.createLost) {
      // The last create's answer was lost: it may have happened. Our protected prefix finds it.
      const found = await this.findLostCreate();
      if (found) return found;
    }
    const createNode = (withDir: boolean) => {
      if (withDir && this.acl)
        c.create(this.nodeDir, null, this.acl, CREATE_MODE_PERSISTENT, () => undefined);
      else if (withDir) c.create(this.nodeDir, null, CREATE_MODE_PERSISTENT, () => undefined);
      const path = `${this.nodeDir}/${this.prefix}`;
      return zk.create(c, path, CREATE_MODE_EPHEMERAL_SEQUENTIAL, this.acl, this.data);
    };
    try {
      const known = lockDirs.has(c, this.nodeDir);
      this.dirBefore = known ? lockDirs.version(c, this.nodeDir) : undefined;
      const path = await createNode(!known);
      lockDirs.add(c, this.nodeDir);
      return path;
    } catch (error) {
      if (errorCode(error) === ERR_NO_NODE) {
        this.dirBefore = undefined;
        lockDirs.forget(c, this.nodeDir);
        await zk.mkdirp(c, this.nodeDir, this.acl);
        const path = await createNode(true).catch((e) => this.createFailed(e));
        lockDirs.add(c, this.nodeDir);
        return path;
      }
      return this.createFailed(error);
    }
  }

  private createFailed(error: unknown): never {
    if (errorCode(error) === ERR_CONNECTION_LOSS) this.createLost = true;
    throw error;
  }

  /**
   * Deletes our node (found by prefix if its create's answer was lost); never leaves an orphan in a
   * live session.
   */
  protected async giveUp(): Promise<null> {
    // A request in flight when the connection dropped fails with CONNECTION_LOSS: try again (the
    // driver queues it until it reconnects). A dead session took its ephemeral nodes with it.
    for (let attempt = 0; attempt < 5 && !this.session.dead; attempt++) {
      try {
        if (!this.path && this.createLost) this.path = await this.findLostCreate();
        if (this.path) await zk.release(this.session.client, this.path);
        break;
      } catch (error) {
        if (errorCode(error) !== ERR_CONNECTION_LOSS) break;
      }
    }
    this.path = undefined;
    return null;
  }
}
