import { sleepFor, toBigInt } from '../../backend-kit';
import {
  ERR_CONNECTION_LOSS,
  EVENT_NODE_DELETED,
  errorCode,
  zk,
  type ZooKeeperEvent,
} from './zookeeper.client';
import { sortChildren, standing } from './zookeeper.nodes';
import { OwnNode, type Grant, type ZooKeeperLockStats } from './zookeeper.own-node';
import type { ZooKeeperSession } from './zookeeper.session';

/**
 * One acquire attempt on one session: Curator's LockInternals.attemptLock loop. Create our
 * EPHEMERAL_SEQUENTIAL node (recovering it by its protected prefix if the create's answer was
 * lost), list the directory, and either hold, or watch the one node we wait for and re-evaluate
 * when it goes. Our own node is watched too: its deletion behind our back is a lost lock.
 * A contender that is abandoned (deadline, cancel, close) deletes its node before it ends.
 */
export class Contender extends OwnNode {
  /**
   * true while a request is outstanding (as opposed to waiting for a watch): tells "slow server"
   * from "busy lock".
   */
  serverCall = false;

  constructor(
    session: ZooKeeperSession,
    readonly dir: string,
    prefix: string,
    readonly owner: string,
    private readonly exclusive: boolean,
    private readonly tryOnce: boolean,
    stats: ZooKeeperLockStats,
    acl?: readonly unknown[],
    /** Our node's data (a campaign's proposal: Curator LeaderLatch's participant id), or none. */
    data?: Buffer,
  ) {
    super(session, stats, dir, prefix, acl, data);
  }

  /**
   * Resolves the grant, or null (busy with tryOnce, or abandoned). Rejects on session expiry or
   * server errors.
   */
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
        // Pipelined: the own-node watch (and its czxid) and the directory listing in one round
        // trip.
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
            // a watch from an earlier round: we moved on
            if (generation !== this.generation) return;
            if (event.type === EVENT_NODE_DELETED) this.stats.watchNotifications++;
            this.kick();
          }),
        );
        if (this.abandoned) return this.giveUp();
        if (watched) await this.sleep();
      } catch (error) {
        if (errorCode(error) === ERR_CONNECTION_LOSS && !this.session.dead && !this.abandoned) {
          // The driver reconnects and queues our next request; watches are re-set on the same
          // session.
          continue;
        }
        throw error;
      }
    }
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    this.serverCall = true;
    try {
      return await op();
    } finally {
      this.serverCall = false;
    }
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
