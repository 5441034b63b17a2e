import { holderData, MAX_DURATION_MS, WAIT_DEADLINE } from '../../backend-kit';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  ElectionBackend,
  LockBackend,
  LockBackendCapabilities,
  BackendWaitPolicy,
  LockInspection,
  SemaphoreBackend,
} from '../../interfaces/lock-backend.interface';
import { errorCode, ERR_SESSION_EXPIRED, zk } from './zookeeper.client';
import { ZooKeeperOperations } from './zookeeper.operations';
import { Contender } from './zookeeper.contender';
import type { Grant, ZooKeeperLockStats } from './zookeeper.own-node';
import { SemaphoreContender } from './zookeeper.semaphore';
import type { ZooKeeperContender } from './zookeeper.semaphore-nodes';
import { driverAcl } from './zookeeper.acl';
import { checkOptions, type ZooKeeperLockBackendOptions } from './zookeeper.options';
import {
  lockDirectory,
  lockNameFor,
  nodePrefix,
  protectedId,
  type CuratorRecipe,
  type NodeNames,
} from './zookeeper.nodes';
import type { SessionState, ZooKeeperSession } from './zookeeper.session';
import { ZooKeeperHeldLocks } from './zookeeper.held-locks';
import { ZooKeeperSessions } from './zookeeper.sessions';

/**
 * ZooKeeper locks in Apache Curator's layout (InterProcessMutex / InterProcessReadWriteLock), so
 * Java services using Curator and this module exclude each other on the same path.
 *
 * Algorithm: each contender owns one EPHEMERAL_SEQUENTIAL node under `<basePath>/<encoded key>`
 * (Curator's `_c_<id>-lock-<seq>`); the server's sequence orders them; a contender holds when
 * Curator's predicate says so (mutex/writer: first; reader: no writer before it) and otherwise
 * watches exactly one node (no herd). A try creates the node, lists the directory once and
 * deletes the node again when it does not hold; a waiter's node stays queued between the engine's
 * attempts, each of which continues its contender until its watch fires (OwnNode.step).
 *
 * Safety comes from ZooKeeper itself: creates are totally ordered and an ephemeral node lives
 * exactly as long as its session, so two holders can never both see themselves first. We lose a
 * lock when our node is deleted, our session expires, or the connection stays down longer than
 * the session timeout (then we can no longer know). Fencing token = our node's czxid: zxids only
 * grow, even when the directory is deleted and recreated.
 *
 * Leader-election campaigns (the `election` extension) are Curator LeaderLatch participants: the
 * node is `_c_<uuid>-latch-<seq>` in the campaign's directory with the proposal as its data
 * (LeaderLatch's participant id); the lowest sequence leads, the others watch their predecessor.
 * With nodeNames 'kazoo' they are kazoo Election contenders instead (`__lock__`, proposal as data).
 * kazoo's `__lock__`/`__rlock__` nodes are contenders in every directory, whatever nodeNames says.
 * Semaphores (`permits`) are Curator's InterProcessSemaphoreV2: a `locks` mutex guards acquisition,
 * one `leases` node per holder, granted while at most the request's own N exist
 * (SemaphoreContender).
 */
export class ZooKeeperLockBackend implements LockBackend {
  readonly name = 'zookeeper';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: true,
    maxKeyLength: 512,
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
  private readonly acl: readonly unknown[] | undefined;
  private readonly sessions: ZooKeeperSessions;
  private readonly heldLocks = new ZooKeeperHeldLocks(this.name, this.stats, () => this.closed);
  private readonly operations = new ZooKeeperOperations(
    this.name,
    () => this.basePath,
    (key) => this.sessions.current(key),
  );
  /** Waiting requests' contenders between the engine's attempts, by owner (see contendOn). */
  private readonly queued = new Map<string, ZooKeeperContender>();
  private closed = false;
  /** A queued waiter is woken by its watches (or a reconnect); a timer would add nothing. */
  readonly waitPolicy: BackendWaitPolicy = { fallbackDelay: MAX_DURATION_MS };

  constructor(options: ZooKeeperLockBackendOptions) {
    const o = checkOptions(options);
    this.basePath = o.basePath;
    this.curatorRecipe = o.curatorRecipe;
    this.nodeNames = o.nodeNames;
    this.acl = o.acl ? driverAcl(o.acl) : undefined;
    this.sessions = new ZooKeeperSessions(
      this.name,
      o,
      this.stats,
      {
        connected: (s) => this.heldLocks.sessionConnected(s),
        lost: (s, reason) => this.heldLocks.sessionLost(s, reason),
      },
      () => this.closed,
    );
  }

  /**
   * 'connected', or the reason the locks of this backend are in doubt ('disconnected') or gone
   * ('expired').
   */
  get connectionState(): SessionState {
    return this.sessions.state;
  }

  /** true while the connection is down and locks are held: they may or may not still be ours. */
  get inDoubt(): boolean {
    return this.heldLocks.inDoubt(this.sessions.latest);
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

  /**
   * Deletes the holder nodes of `key`, whoever created them; their holders see the loss at once
   * (node watch).
   */
  forceRelease(key: string): Promise<boolean> {
    return this.operations.forceRelease(key);
  }
  /**
   * One attempt: create our node and list the directory. Without wait, not first: delete it, busy.
   * With wait, not first: watch the node we wait for, and answer busy with the contender as wake;
   * the engine's next attempt continues it (a step: see OwnNode.step) until it holds.
   */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.contend(request, {});
  }

  /** A waiter that gave up: its contender stops and its node is deleted. */
  async leave(request: BackendAttempt): Promise<void> {
    const contender = this.queued.get(request.owner);
    if (!contender) return;
    this.queued.delete(request.owner);
    this.heldLocks.abandon(contender);
  }

  /** Native semaphores: Curator's InterProcessSemaphoreV2 layout (zookeeper.semaphore.ts). */
  readonly semaphore: SemaphoreBackend = {
    tryAcquire: (request, permits) => this.contend(request, { permits }),
    leave: (request) => this.leave(request),
    renew: (permits) => this.heldLocks.renew(permits),
    release: (permit) =>
      this.heldLocks.release(permit, lockDirectory(this.basePath, permit.key), true),
  };

  /** Campaigns as Curator LeaderLatch participants (kazoo Election contenders with 'kazoo'). */
  readonly election: ElectionBackend = {
    tryAcquire: (request, proposal) => this.contend(request, { proposal }),
    leave: (request) => this.leave(request),
  };

  /** Contends on a session until granted or busy; a session that expires meanwhile is replaced. */
  private async contend(request: BackendAttempt, form: ContendForm): Promise<BackendAcquireResult> {
    const tryOnce = !request.wait;
    for (;;) {
      const session = this.sessions.current(request.key);
      if (!session.connected) {
        const connected = await this.connect(session, request, tryOnce);
        if (connected === 'retry') continue;
        if (connected === 'cancelled') return { acquired: false };
      }
      this.sessions.checkNegotiated(session, request.key);
      const result = await this.contendOn(session, request, tryOnce, form);
      if (result !== 'retry') return result;
    }
  }

  /**
   * Waits for a session that is down: 'ok', 'retry' on a fresh session, or 'cancelled'; else
   * throws.
   */
  private async connect(
    session: ZooKeeperSession,
    request: BackendAttempt,
    tryOnce: boolean,
  ): Promise<'ok' | 'retry' | 'cancelled'> {
    // A session that worked before and is down now fails fast on a try-once; otherwise wait for it
    // within the budget.
    const ok =
      tryOnce && !session.fresh
        ? false
        : await session.whenConnected(tryOnce ? undefined : request.signal);
    if (ok) return 'ok';
    if (session.dead && this.sessions.renewable && !request.signal.aborted) return 'retry';
    // Cancelled by the caller during a first connect that has not failed yet: let the engine
    // throw the caller's reason. Reaching the deadline unconnected is an outage.
    const signal = request.signal;
    if (session.state === 'connecting' && signal.aborted && signal.reason !== WAIT_DEADLINE)
      return 'cancelled';
    throw new LockBackendUnavailableError(
      this.name,
      `not connected to ZooKeeper (${session.lostReason ?? session.state})`,
      { key: request.key },
    );
  }

  /** The contender of `form`: a semaphore's lease, or a lock's (or latch's) node. */
  private contender(
    session: ZooKeeperSession,
    request: BackendAttempt,
    tryOnce: boolean,
    form: ContendForm,
  ): ZooKeeperContender {
    const dir = lockDirectory(this.basePath, request.key);
    const { owner } = request;
    if (form.permits !== undefined)
      return new SemaphoreContender(
        session,
        dir,
        owner,
        form.permits,
        tryOnce,
        this.stats,
        this.acl,
      );
    const election = form.proposal !== undefined;
    const lockName = lockNameFor(this.nodeNames, this.curatorRecipe, request.mode, election);
    const prefix = nodePrefix(protectedId(owner), lockName);
    const data = nodeData(request, form.proposal);
    const exclusive = request.mode === 'exclusive';
    return new Contender(
      session,
      dir,
      prefix,
      owner,
      exclusive,
      tryOnce,
      this.stats,
      this.acl,
      data,
    );
  }

  /**
   * One attempt on `session`: the result, or 'retry' when the session expired meanwhile. A waiting
   * request's contender lives on between attempts while it is queued (`queued`, by owner).
   */
  private async contendOn(
    session: ZooKeeperSession,
    request: BackendAttempt,
    tryOnce: boolean,
    form: ContendForm,
  ): Promise<BackendAcquireResult | 'retry'> {
    const { owner } = request;
    let contender = tryOnce ? undefined : this.queued.get(owner);
    if (contender && contender.session !== session) {
      // Its session was replaced: queue again on this one.
      this.queued.delete(owner);
      this.heldLocks.abandon(contender);
      contender = undefined;
    }
    contender ??= this.contender(session, request, tryOnce, form);
    let outcome: Grant | null | 'busy';
    try {
      outcome = await this.heldLocks.step(contender);
    } catch (error) {
      this.queued.delete(owner);
      this.heldLocks.settle(contender);
      const expired = session.dead || errorCode(error) === ERR_SESSION_EXPIRED;
      // queue again on a fresh session
      if (expired && this.sessions.renewable && !request.signal.aborted) return 'retry';
      throw new LockBackendUnavailableError(
        this.name,
        expired ? 'the ZooKeeper session expired while acquiring' : 'a ZooKeeper request failed',
        { key: request.key, cause: error },
      );
    }
    if (outcome === 'busy') {
      this.queued.set(owner, contender);
      return { acquired: false, wake: contender };
    }
    this.queued.delete(owner);
    this.heldLocks.settle(contender);
    // Abandoned meanwhile (a release or close): its node is deleted (ZooKeeperHeldLocks.abandon).
    if (!outcome || contender.abandoned) return { acquired: false };
    if (this.closed) return this.grantedWhileClosing(session, request, outcome.path);
    this.heldLocks.hold(request, session, contender, outcome);
    return { acquired: true, fencingToken: outcome.czxid, sentAt: outcome.sentAt };
  }

  /**
   * Granted while closing: delete the node now. A failure is the error's cause (the node then
   * stays until its session ends: at once for an owned client, which close() closes).
   */
  private async grantedWhileClosing(
    session: ZooKeeperSession,
    request: BackendAttempt,
    path: string,
  ): Promise<never> {
    let cause: unknown;
    await zk.release(session.client, path).catch((e: unknown) => (cause = e));
    throw new LockBackendUnavailableError(
      this.name,
      cause === undefined
        ? 'the backend was closed'
        : 'the backend was closed, and deleting the node granted meanwhile failed',
      { key: request.key, cause },
    );
  }

  /** One exists() per lock, pipelined on the session: one round trip for the batch. */
  renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    return this.heldLocks.renew(locks);
  }

  release(lock: BackendLock): Promise<void> {
    return this.heldLocks.release(lock, lockDirectory(this.basePath, lock.key));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Give our deletes a session timeout to reach the server; an owned client's close drops its
    // nodes anyway.
    await this.heldLocks.close(Math.max(this.sessions.latest?.sessionTimeout ?? 0, 1_000));
    await this.sessions.close();
  }
}

/** What a contention takes: a lock's node, a semaphore's lease (permits) or a latch (proposal). */
interface ContendForm {
  readonly permits?: number;
  readonly proposal?: string;
}

/**
 * Our node's data: a campaign's proposal (LeaderLatch's participant id), else the holder's data
 * (host, pid, instance), where Curator stores the client's IP address and kazoo an identifier.
 */
function nodeData(request: BackendAttempt, proposal: string | undefined): Buffer | undefined {
  const text = proposal ?? holderData(request.holder);
  return proposal !== undefined || text ? Buffer.from(text, 'utf8') : undefined;
}
