import { sleepFor, toBigInt } from '../../backend-kit';
import {
  ERR_CONNECTION_LOSS,
  EVENT_NODE_DELETED,
  dirVersion,
  errorCode,
  zk,
  type Listing,
  type ZooKeeperClientLike,
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
  /** Our node's czxid (the fencing token), once known. */
  private czxid: bigint | undefined;
  /** When the request the grant rests on was sent (see Grant.sentAt). */
  private sentAt: number | undefined;

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
   *
   * Round trips: the create and the directory's listing go out together (the server runs a
   * session's requests in order, so the listing shows our node). Holding, the fencing token comes
   * from that listing when our create was the only change to the directory's children it shows
   * (czxidFrom): then the directory's pzxid is our create's zxid, our czxid; else one read of our
   * node. The watch on our
   * own node is then set without waiting for it. Waiting, the watches on our node and on the one
   * we wait for go out together. The first waiter (exclusive, exactly one older node) is granted
   * on that node's delete event with no read after it: the listing after our create held every
   * older node (a later node gets a larger sequence), and the server delivers a delete of our
   * own node before any later answer, so when the one older node is gone and ours is not, we are
   * first. Waiters further back watch the second-youngest older node instead of their
   * predecessor: when it goes they re-list and become the first waiter while the node ahead still
   * holds, so their read is off the handoff's path. Any older node blocks an exclusive waiter, so
   * waiting for that one never skips our turn.
   */
  async run(): Promise<Grant | null> {
    let listing: Listing | null | undefined;
    for (;;) {
      if (this.abandoned) return this.giveUp();
      try {
        const c = this.session.client;
        this.woken = false;
        if (!this.path) listing = await this.createAndList(c);
        if (this.abandoned || !this.path) return this.giveUp();
        const path = this.path;
        const ours = path.slice(this.dir.length + 1);
        if (!listing?.children.includes(ours)) {
          this.sentAt = performance.now();
          listing = await zk.listing(c, this.dir);
        }
        if (this.abandoned) return this.giveUp();
        const sorted = sortChildren(listing?.children ?? []);
        const where = standing(sorted, ours, this.exclusive);
        const step =
          'missing' in where
            ? 'missing'
            : where.held
              ? await this.holdNow(c, path, listing as Listing, ours)
              : this.tryOnce
                ? 'busy'
                : await this.waitTurn(c, path, sorted.indexOf(ours), sorted, where.watch);
        listing = undefined;
        if (step === 'busy') return this.giveUp();
        if (step === 'granted') return { path, czxid: this.czxid as bigint, sentAt: this.sentAt };
        // Our node vanished (deleted by an operator, or its directory removed): queue up again.
        if (step === 'missing') this.path = undefined;
      } catch (error) {
        listing = undefined;
        if (errorCode(error) === ERR_CONNECTION_LOSS && !this.session.dead && !this.abandoned) {
          // The driver reconnects and queues our next request; watches are re-set on the same
          // session.
          continue;
        }
        throw error;
      }
    }
  }

  /** Creates our node and lists the directory right behind it: the listing, if it answered. */
  private async createAndList(c: ZooKeeperClientLike): Promise<Listing | null | undefined> {
    this.sentAt = performance.now();
    const created = this.create();
    const listed = zk.listing(c, this.dir);
    listed.catch(() => undefined);
    this.path = await created;
    this.czxid = undefined;
    this.ownWatched = false;
    this.ownGone = false;
    if (this.abandoned) return undefined;
    return listed.catch(() => undefined);
  }

  /** We are first: the grant, with our czxid from the listing or from one read of our node. */
  private async holdNow(
    c: ZooKeeperClientLike,
    path: string,
    listing: Listing,
    ours: string,
  ): Promise<'granted' | 'missing'> {
    this.czxid ??= this.czxidFrom(listing, ours);
    if (this.czxid === undefined) {
      this.sentAt = performance.now();
      const stat = await this.watchOwn(c, path);
      if (!stat) return 'missing';
      this.czxid = toBigInt(stat.czxid, 'zookeeper');
    }
    this.granted = true;
    if (!this.ownWatched) this.watchOwnLater(c, path);
    return 'granted';
  }

  /**
   * Watches the node we wait for (and our own, in the same round trip) and sleeps until woken:
   * 'granted' when we are the first waiter and its node went while ours did not, else 'again'
   * (list again) or 'missing' (our node is gone).
   */
  private async waitTurn(
    c: ZooKeeperClientLike,
    path: string,
    index: number,
    sorted: readonly string[],
    watch: string,
  ): Promise<'granted' | 'again' | 'missing'> {
    const first = this.exclusive && index === 1;
    const target = this.exclusive && index >= 2 ? sorted[index - 2] : watch;
    const generation = ++this.generation;
    const [stat, watched] = await Promise.all([
      this.ownWatched ? undefined : this.watchOwn(c, path),
      zk.watch(c, `${this.dir}/${target}`, (event: ZooKeeperEvent) => {
        // a watch from an earlier round: we moved on
        if (generation !== this.generation) return;
        if (event.type === EVENT_NODE_DELETED) {
          this.stats.watchNotifications++;
          if (first) this.turn = generation;
        }
        this.kick();
      }),
    ]);
    if (stat === null) return 'missing';
    if (stat) this.czxid = toBigInt(stat.czxid, 'zookeeper');
    if (this.abandoned) return 'again';
    if (first && !watched) this.turn = generation;
    else if (watched) await this.sleep();
    if (this.abandoned || !first || this.turn !== generation || this.ownGone) return 'again';
    if (this.czxid === undefined) return 'again';
    // The delete event is pushed by the server: it says nothing of when the server last heard from
    // our session, which may expire sooner than a ttl from now. One read of our own node (also
    // confirming it) gives the grant a send time its validity can count from.
    this.sentAt = performance.now();
    if (!(await zk.exists(c, path))) return 'missing';
    if (this.abandoned || this.ownGone) return 'again';
    this.granted = true;
    return 'granted';
  }

  /**
   * Our czxid from a listing taken right after our create, when our create is the only change to
   * the directory's children before it: then its pzxid is our create's zxid. Every child create
   * and delete adds one to the cversion, so that holds when the same directory (same czxid) shows
   * one more than in a listing the server answered before our create (dirBefore), or, in a
   * directory no child was ever deleted from, one more than our sequence suffix (the count of
   * creates before ours).
   */
  private czxidFrom(listing: Listing, ours: string): bigint | undefined {
    const suffix = ours.slice(this.prefix.length);
    const now = dirVersion(listing.stat);
    const pzxid = listing.stat?.pzxid;
    if (!now || pzxid === undefined) return undefined;
    const before = this.dirBefore;
    const onlyOurs =
      (before !== undefined &&
        before.czxid === now.czxid &&
        now.cversion === before.cversion + 1) ||
      (/^\d{10}$/.test(suffix) && now.cversion === Number(suffix) + 1);
    return onlyOurs ? toBigInt(pzxid, 'zookeeper') : undefined;
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
