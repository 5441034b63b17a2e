import { toBigInt } from '../../backend-kit';
import { ERR_CONNECTION_LOSS, errorCode, zk } from './zookeeper.client';
import { Contender, deleteUntilGone } from './zookeeper.contender';
import { MUTEX_LOCK_NAME, nodePrefix, protectedId } from './zookeeper.nodes';
import { OwnNode, type Grant, type ZooKeeperLockStats } from './zookeeper.own-node';
import type { ZooKeeperSession } from './zookeeper.session';
import {
  LEASE_NAME,
  leaseHolds,
  PARTICIPANT,
  SEMAPHORE_LEASES,
  SEMAPHORE_LOCKS,
  watchChildren,
} from './zookeeper.semaphore-nodes';

/**
 * One semaphore acquire on one session, Curator's InterProcessSemaphoreV2.internalAcquire1Lease:
 * take the `locks` mutex (a Contender: queued, one predecessor watch each), then, holding it,
 * create our lease node, list `leases` with a watch and hold when at most OUR permits leases are as
 * old as ours (leaseHolds: each participant counts against its own N, Curator's rule; Curator
 * counts every lease, which holds by ours too). Otherwise wait, still holding the mutex, for
 * `leases` to change (a lease returned, by Curator or by us) and count again; finally give the
 * mutex back. A tryAcquire that finds the mutex busy counts without it. Safety does not even need
 * the mutex (see leaseHolds); it makes waiters queue (FIFO, no herd) and keeps Curator's waiters'
 * turn. Counting only older leases matters to tries: counting every lease, concurrent tries on a
 * free semaphore could each see the others' new leases and all answer busy.
 *
 * Same surface as Contender, so the backend drives both alike (abandon, kick, own-node loss); the
 * grant is the lease node, its fencing token the node's czxid (the sequence restarts when an empty
 * `leases` is deleted and recreated; zxids never go back).
 */
export class SemaphoreContender extends OwnNode {
  private mutex: Contender | undefined;
  private readonly leases: string;

  constructor(
    session: ZooKeeperSession,
    /** The semaphore path `<basePath>/<encoded key>` (the backend matches releases by it). */
    readonly dir: string,
    readonly owner: string,
    private readonly permits: number,
    private readonly tryOnce: boolean,
    stats: ZooKeeperLockStats,
    acl?: readonly unknown[],
  ) {
    // Our lease node: `leases/_c_<uuid>-lease-<seq>`, the participant as its data (Curator's
    // setNodeData).
    const leases = `${dir}/${SEMAPHORE_LEASES}`;
    super(session, stats, leases, nodePrefix(protectedId(owner), LEASE_NAME), acl, PARTICIPANT);
    this.leases = leases;
  }

  /**
   * Resolves the grant, or null (full with tryOnce, or abandoned). Rejects on session expiry or
   * server errors.
   */
  async run(): Promise<Grant | null> {
    const c = this.session.client;
    for (;;) {
      if (this.tryOnce) {
        // Full already: busy without creating a node (a read; adding ours could only exceed N).
        const now = await zk.children(c, this.leases);
        if (now && now.length >= this.permits) return null;
      }
      if (this.abandoned) return null;
      const mutex = new Contender(
        this.session,
        `${this.dir}/${SEMAPHORE_LOCKS}`,
        nodePrefix(protectedId(this.owner), MUTEX_LOCK_NAME),
        this.owner,
        true,
        this.tryOnce,
        this.stats,
        this.acl,
      );
      // The mutex's queue is the semaphore's wait: its sleeps end the semaphore's steps.
      mutex.stepper = this;
      this.mutex = mutex;
      const locked = await mutex.run();
      // A try that finds the mutex busy (another acquire is counting right now) still counts the
      // leases, without it: the bound holds without the mutex (see the class comment), and a
      // free permit must not answer busy.
      if (!locked && (!this.tryOnce || this.abandoned)) return null;
      let path: string | null;
      try {
        path = await this.lease();
      } finally {
        // Not awaited: nothing of ours needs to wait for it (this session's requests stay in
        // order).
        if (locked) this.unlock(locked.path);
      }
      if (!path) return null;
      // After the mutex went: our node's watch (its deletion is a lost lease) and czxid (the
      // token).
      const sentAt = performance.now();
      const stat = await zk.watch(c, path, this.ownWatcher);
      if (this.abandoned) return this.giveUp();
      if (stat) {
        this.granted = true;
        return { path, czxid: toBigInt(stat.czxid, 'zookeeper'), sentAt };
      }
      this.path = undefined; // deleted between our count and now: start over
      if (this.tryOnce) return null;
    }
  }

  /** Wakes the loop (and the `locks` mutex's) to re-evaluate (watch fired, reconnect, abandon). */
  override kick(): void {
    this.mutex?.kick();
    super.kick();
  }

  override abandon(): void {
    this.mutex?.abandon();
    super.abandon();
  }

  /**
   * Holding the mutex: our lease node, counted against our permits, waiting for `leases` to change.
   */
  private async lease(): Promise<string | null> {
    const c = this.session.client;
    for (;;) {
      if (this.abandoned) return this.giveUp();
      try {
        const fresh = !this.path;
        // After a lost create answer, find our node first (by its protected prefix).
        if (!this.path && this.createLost) this.path = await this.create();
        this.woken = false;
        const generation = ++this.generation;
        // Pipelined: our create goes out before the watched listing, and the server runs a
        // session's requests in order, so the listing includes our node: one round trip.
        const creating = this.path ? undefined : this.create();
        const [made, listed] = await Promise.allSettled([
          creating,
          watchChildren(c, this.leases, () => {
            if (generation === this.generation) this.kick();
          }),
        ]);
        if (made.status === 'rejected') throw made.reason;
        if (made.value) this.path = made.value;
        if (this.abandoned) return this.giveUp();
        if (listed.status === 'rejected') throw listed.reason;
        const path = this.path as string;
        if (!listed.value?.includes(path.slice(this.leases.length + 1))) {
          // Vanished (an operator, a forced release): create it again, as Curator retries. A node
          // created just now is missing only when its create was retried after the listing: list
          // again.
          if (!fresh) this.path = undefined;
          continue;
        }
        if (leaseHolds(listed.value, path.slice(this.leases.length + 1), this.permits)) return path;
        if (this.tryOnce) return this.giveUp();
        await this.sleep();
      } catch (error) {
        if (errorCode(error) === ERR_CONNECTION_LOSS && !this.session.dead && !this.abandoned)
          continue; // the driver reconnects and queues the next request on the same session
        throw error;
      }
    }
  }

  /**
   * Gives the `locks` mutex back. A failed delete would keep every other acquirer out for as long
   * as our session lives, so it keeps trying in the background (Curator's guaranteed delete).
   */
  private unlock(path: string): void {
    if (this.session.dead) return;
    zk.release(this.session.client, path).catch(() =>
      deleteUntilGone(this.session, path, () => false),
    );
  }
}
