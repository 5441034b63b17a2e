import { sleepFor, toBigInt } from '../../backend-kit';
import {
  CREATE_MODE_EPHEMERAL_SEQUENTIAL,
  CREATE_MODE_PERSISTENT,
  ERR_CONNECTION_LOSS,
  ERR_NO_NODE,
  EVENT_NODE_DELETED,
  errorCode,
  zk,
  type ZooKeeperEvent,
} from './zookeeper.client';
import { sortChildren, standing } from './zookeeper.nodes';
import type { ZooKeeperSession } from './zookeeper.session';

export interface ZooKeeperLockStats {
  /** Predecessor-watch notifications received (a release should wake exactly one waiting writer). */
  watchNotifications: number;
  /** Sessions (clients) this backend has used. */
  sessions: number;
  /**
   * Background deletes of our nodes (after a loss, an abandoned wait, close) that failed for good,
   * and the last such error: each such node stays until its session ends.
   */
  cleanupFailures?: number;
  lastCleanupError?: unknown;
  /** Re-arming the watch on our own node failed; renew()'s exists() then finds a deleted node instead. */
  ownWatchFailures?: number;
}

export interface Grant {
  readonly path: string;
  readonly czxid: bigint;
}

/**
 * One acquire attempt on one session: Curator's LockInternals.attemptLock loop. Create our
 * EPHEMERAL_SEQUENTIAL node (recovering it by its protected prefix if the create's answer was
 * lost), list the directory, and either hold, or watch the one node we wait for and re-evaluate
 * when it goes. Our own node is watched too: its deletion behind our back is a lost lock.
 * A contender that is abandoned (deadline, cancel, close) deletes its node before it ends.
 */
export class Contender {
  path: string | undefined;
  abandoned = false;
  /** true while a request is outstanding (as opposed to waiting for a watch): tells "slow server" from "busy lock". */
  serverCall = false;
  granted = false;
  /** Set by the backend after the grant; called once if our node is deleted. */
  onOwnDeleted: (() => void) | undefined;
  ownDeleted = false;
  private createLost = false;
  private wake: (() => void) | undefined;
  private woken = false;
  private generation = 0;

  constructor(
    readonly session: ZooKeeperSession,
    readonly dir: string,
    readonly prefix: string,
    readonly owner: string,
    private readonly exclusive: boolean,
    private readonly tryOnce: boolean,
    private readonly stats: ZooKeeperLockStats,
    /** ACL of the nodes we create (driver form), or undefined for the driver's open default. */
    private readonly acl?: readonly unknown[],
    /** Our node's data (a campaign's proposal: Curator LeaderLatch's participant id), or none. */
    private readonly data?: Buffer,
  ) {}

  /** Resolves the grant, or null (busy with tryOnce, or abandoned). Rejects on session expiry or server errors. */
  async run(): Promise<Grant | null> {
    let czxid: bigint | undefined;
    for (;;) {
      if (this.abandoned) return this.giveUp();
      try {
        if (!this.path) {
          this.path = await this.call(() => this.create());
          czxid = undefined;
          if (this.abandoned) return this.giveUp();
        }
        this.woken = false;
        const path = this.path;
        const c = this.session.client;
        // Pipelined: the own-node watch (and its czxid) and the directory listing in one round trip.
        const [stat, children] = await this.call(() =>
          Promise.all([
            czxid === undefined ? zk.watch(c, path, this.ownWatcher) : undefined,
            zk.children(c, this.dir),
          ]),
        );
        if (this.abandoned) return this.giveUp();
        if (stat) czxid = toBigInt(stat.czxid, 'zookeeper');
        const ours = path.slice(this.dir.length + 1);
        const where =
          children && stat !== null
            ? standing(sortChildren(children), ours, this.exclusive)
            : ({ held: false, missing: true } as const);
        if ('missing' in where) {
          // Our node vanished (deleted by an operator, or its directory removed): queue up again.
          this.path = undefined;
          continue;
        }
        if (where.held) {
          this.granted = true;
          return { path, czxid: czxid as bigint };
        }
        if (this.tryOnce) return this.giveUp();
        const generation = ++this.generation;
        const watched = await this.call(() =>
          zk.watch(c, `${this.dir}/${where.watch}`, (event: ZooKeeperEvent) => {
            if (generation !== this.generation) return; // a watch from an earlier round: we moved on
            if (event.type === EVENT_NODE_DELETED) this.stats.watchNotifications++;
            this.kick();
          }),
        );
        if (this.abandoned) return this.giveUp();
        if (watched) await this.sleep();
      } catch (error) {
        if (errorCode(error) === ERR_CONNECTION_LOSS && !this.session.dead && !this.abandoned) {
          // The driver reconnects and queues our next request; watches are re-set on the same session.
          continue;
        }
        throw error;
      }
    }
  }

  /** Wakes the loop to re-evaluate (watch fired, reconnect, abandon). */
  kick(): void {
    this.woken = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  abandon(): void {
    this.abandoned = true;
    this.kick();
  }

  private readonly ownWatcher = (event: ZooKeeperEvent): void => {
    if (event.type !== EVENT_NODE_DELETED) {
      // Someone touched our node's data: re-arm (watches are one-shot).
      if (this.path === event.path) {
        zk.watch(this.session.client, event.path, this.ownWatcher).then(
          (s) => (s ? undefined : this.ownWatcher({ type: EVENT_NODE_DELETED, path: event.path })),
          // Counted, not thrown (a watcher has no caller): without the watch a deletion of our node
          // is still found by the next renew()'s exists(), and session loss by the session state.
          () => {
            this.stats.ownWatchFailures = (this.stats.ownWatchFailures ?? 0) + 1;
          },
        );
      }
      return;
    }
    if (this.path !== event.path) return;
    if (this.granted) {
      if (this.ownDeleted) return;
      this.ownDeleted = true;
      this.onOwnDeleted?.();
    } else this.kick();
  };

  private sleep(): Promise<void> {
    if (this.woken || this.abandoned) return Promise.resolve();
    return new Promise((resolve) => (this.wake = resolve));
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    this.serverCall = true;
    try {
      return await op();
    } finally {
      this.serverCall = false;
    }
  }

  private async create(): Promise<string> {
    const c = this.session.client;
    if (this.createLost) {
      // The last create's answer was lost: it may have happened. Our protected prefix finds it.
      const children = await zk.children(c, this.dir);
      this.createLost = false;
      const mine = children?.find((child) => child.startsWith(this.prefix));
      if (mine) return `${this.dir}/${mine}`;
    }
    try {
      // The directory is deleted when its last node goes, so create it first, in the same round trip:
      // the server runs a session's requests in order, so it exists when our node's create runs
      // (NODE_EXISTS, the usual answer, is ignored; NO_NODE means the base path is missing: mkdirp below;
      // any other error fails our node's create as well, and that error is thrown).
      if (this.acl) c.create(this.dir, null, this.acl, CREATE_MODE_PERSISTENT, () => undefined);
      else c.create(this.dir, null, CREATE_MODE_PERSISTENT, () => undefined);
      return await zk.create(
        c,
        `${this.dir}/${this.prefix}`,
        CREATE_MODE_EPHEMERAL_SEQUENTIAL,
        this.acl,
        this.data,
      );
    } catch (error) {
      const code = errorCode(error);
      if (code === ERR_NO_NODE) {
        await zk.mkdirp(c, this.dir, this.acl);
        return zk
          .create(
            c,
            `${this.dir}/${this.prefix}`,
            CREATE_MODE_EPHEMERAL_SEQUENTIAL,
            this.acl,
            this.data,
          )
          .catch((e) => this.createFailed(e));
      }
      return this.createFailed(error);
    }
  }

  private createFailed(error: unknown): never {
    if (errorCode(error) === ERR_CONNECTION_LOSS) this.createLost = true;
    throw error;
  }

  /** Deletes our node (found by prefix if its create's answer was lost); never leaves an orphan in a live session. */
  private async giveUp(): Promise<null> {
    const c = this.session.client;
    // A request in flight when the connection dropped fails with CONNECTION_LOSS: try again (the
    // driver queues it until it reconnects). A dead session took its ephemeral nodes with it.
    for (let attempt = 0; attempt < 5 && !this.session.dead; attempt++) {
      try {
        if (!this.path && this.createLost) {
          const children = await zk.children(c, this.dir);
          const mine = children?.find((child) => child.startsWith(this.prefix));
          if (mine) this.path = `${this.dir}/${mine}`;
          this.createLost = false;
        }
        if (this.path) await zk.release(c, this.path);
        break;
      } catch (error) {
        if (errorCode(error) !== ERR_CONNECTION_LOSS) break;
      }
    }
    this.path = undefined;
    return null;
  }
}

/**
 * Curator's "guaranteed delete": keeps deleting our node (after each reconnect) until it is gone,
 * the session ends (taking its ephemeral nodes) or `stopped()`; a live session would otherwise
 * keep the node, and so the lock, forever.
 */
export async function deleteUntilGone(
  session: ZooKeeperSession,
  path: string,
  stopped: () => boolean,
): Promise<void> {
  for (let delay = 50; !session.dead && !stopped(); delay = Math.min(delay * 2, 1_000)) {
    if (!(await session.whenConnected())) return;
    try {
      await zk.release(session.client, path);
      return;
    } catch {
      await sleepFor(delay);
    }
  }
}
