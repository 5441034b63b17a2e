import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { BackendAcquireResult, BackendAttempt } from '../../interfaces/lock-backend.interface';
import { deleteUntilGone } from './etcd.cleanup';
import { contend } from './etcd.contend';
import { OwnKey, QueuedRequest, Waiter } from './etcd.own-key';
import { writerQueuedAfter } from './etcd.ops';
import type { QueueWatches } from './etcd.queue-watch';
import type { EtcdSession } from './etcd.session';

/**
 * The local side of one lock NAME in one backend. etcd's layout gives a session exactly one key
 * per NAME (`NAME/<lease>`), so owners of this process cannot each queue on etcd: they queue here.
 * An *own key* (`OwnKey`; Go's Mutex calls it myKey) is one life of our key: created, queued on
 * etcd, held, deleted. An exclusive owner always gets a key of its own (a new key = a new, larger
 * create revision = a new fencing token); shared owners may share one, but join a held one only
 * while no writer queues behind it (else a stream of readers would starve the writer). The next own
 * key starts only after the previous key's deletion is confirmed, so a stale key is never mistaken
 * for ours. Jobs live apart: this file admits, queues and settles local owners; etcd.contend.ts
 * queues an own key on etcd; etcd.cleanup.ts deletes its key.
 */
export interface LocalQueueContext {
  readonly backend: string;
  readonly callTimeout: number;
  /** Re-read the position at least this often while watching (fallback for a lost event). */
  readonly recheckInterval: number;
  /** The backend's queue watches (etcd.queue-watch.ts). */
  readonly watches: QueueWatches;
  session(key?: string): Promise<EtcdSession>;
  /** Called when the local queue holds nothing and queues nothing: the backend forgets it. */
  idle(queue: LocalQueue): void;
}

export class LocalQueue {
  private current: OwnKey | undefined;
  private readonly queue: Waiter[] = [];
  private cleanup: Promise<void> | undefined;
  private cleanupFailure: unknown;
  /** Requests with wait > 0 between the engine's attempts, by owner (see step). */
  private readonly queued = new Map<string, QueuedRequest>();

  constructor(
    readonly fullKey: string,
    readonly lockPrefix: Buffer,
    private readonly ctx: LocalQueueContext,
  ) {}

  get empty(): boolean {
    return !this.current && !this.cleanup && this.queue.length === 0 && this.queued.size === 0;
  }

  /** One attempt without a wait (Go's Mutex.TryLock): busy after etcd's first answer. */
  tryOnce(request: BackendAttempt, proposal?: string): Promise<BackendAcquireResult> {
    return new Promise((resolve, reject) => {
      const w = new Waiter(request, true, resolve, reject, proposal);
      request.signal.addEventListener('abort', () => this.abandon(w), { once: true });
      this.admit(w);
    });
  }

  /**
   * One attempt of the engine's wait for a request with wait > 0. The first joins this queue and
   * answers once its place is known: granted, or busy with the request as the wake (queued here
   * behind another owner, or on etcd behind another contender). Later attempts read what came
   * since, with no round trip. While etcd fails the attempt fails too, so the engine retries with
   * backoff and reports the outage, not a timeout, at the deadline.
   */
  async step(request: BackendAttempt, proposal?: string): Promise<BackendAcquireResult> {
    let q = this.queued.get(request.owner);
    if (!q) {
      this.queued.set(request.owner, (q = new QueuedRequest(request, proposal)));
      this.admit(q.waiter);
      // Its own key's first answer, or a reader's check of a held key, is on its way: wait for it
      // (unless our last key's deletion is failing: that is the answer for now).
      const cur = this.current;
      const asking = cur?.waiters.has(q.waiter) && (cur.state === 'held' || cur.answers === 0);
      if (asking && this.cleanupFailure === undefined) await q.next();
    }
    if (q.outcome) this.forget(request.owner);
    const failure = this.failureOf(q.waiter);
    return q.answer(failure && this.unavailable('etcd did not answer', failure));
  }

  /** A waiting request gave up (the engine's deadline or cancel); a grant that raced goes back. */
  async leave(owner: string): Promise<void> {
    const q = this.queued.get(owner);
    if (!q) return;
    this.forget(owner);
    if (!q.outcome) this.abandon(q.waiter);
    const outcome = await q.done;
    if ('result' in outcome && outcome.result.acquired)
      await this.release(owner).catch(() => undefined);
  }

  private admit(w: Waiter): void {
    const cur = this.current;
    if (!cur && this.queue.length === 0) return this.start([w]);
    const joinable = cur?.mode === 'shared' && w.mode === 'shared' && this.queue.length === 0;
    if (joinable && cur.state === 'held') return void this.joinHeld(cur, w);
    if (joinable && cur.state === 'waiting') {
      // A try-once reader rides along with the first attempt; once etcd said "blocked", it is busy.
      if (!w.givingUp || cur.answers === 0) return this.join(cur, w);
      return cur.failure !== undefined
        ? w.fail(this.unavailable('etcd did not answer', cur.failure))
        : w.settle({ acquired: false });
    }
    // Another owner of this process holds or queues first: busy for a try-once, else queue
    // locally.
    if (w.givingUp) return w.settle({ acquired: false });
    this.enqueue(w);
  }

  /** The failure a waiter waits behind: its own key's last answer, or our last key's deletion. */
  private failureOf(w: Waiter): unknown {
    const cur = this.current;
    if (cur?.waiters.has(w)) return cur.failure ?? this.cleanupFailure;
    return this.queue.includes(w) ? this.cleanupFailure : undefined;
  }

  private forget(owner: string): void {
    this.queued.delete(owner);
    if (this.empty) this.ctx.idle(this);
  }

  /** The held own key of `owner`, for renew and release. */
  heldBy(owner: string): { session: EtcdSession; key: Buffer; rev: bigint } | undefined {
    const cur = this.current;
    if (
      cur?.state !== 'held' ||
      !cur.holders.has(owner) ||
      !cur.session ||
      !cur.key ||
      cur.rev === undefined
    )
      return undefined;
    return { session: cur.session, key: cur.key, rev: cur.rev };
  }

  /** Owner-checked release: the key is deleted when the last local holder of it leaves. */
  async release(owner: string): Promise<void> {
    const cur = this.current;
    if (!cur || !cur.holders.delete(owner)) return;
    if (cur.holders.size === 0 && cur.waiters.size === 0) await this.end(cur, true);
  }

  /**
   * Our key is gone (deleted behind our back, or its lease ended): every holder has lost the lock.
   */
  lost(reason: string, cause?: unknown, rev?: bigint): void {
    const cur = this.current;
    if (cur?.state !== 'held' || (rev !== undefined && cur.rev !== rev)) return;
    const holders = [...cur.holders.values()];
    cur.holders.clear();
    void this.end(cur, false);
    for (const onLost of holders) onLost(reason, cause);
  }

  /** Backend closing: every waiter fails (holders were released by the engine first). */
  close(): void {
    const error = new LockBackendUnavailableError(this.ctx.backend, 'the backend was closed', {
      key: this.fullKey,
    });
    for (const w of this.queue.splice(0)) w.fail(error);
    const cur = this.current;
    if (cur) for (const w of cur.waiters) w.fail(error);
    if (cur) {
      cur.waiters.clear();
      cur.wake.abort();
    }
  }

  private start(group: Waiter[]): void {
    group = group.filter((w) => !w.settled);
    if (group.length === 0) return this.serveNext();
    const ownKey = new OwnKey(group[0].mode, group[0].proposal);
    for (const w of group) this.join(ownKey, w);
    this.current = ownKey;
    void this.run(ownKey);
  }

  private join(ownKey: OwnKey, w: Waiter): void {
    w.seen = ownKey.answers;
    ownKey.waiters.add(w);
    // The key lives on for the newcomer: those who left need not wait for its deletion.
    for (const settle of ownKey.leaving.splice(0)) settle();
  }

  /** A reader joins a held shared own key unless a writer queued behind it. */
  private async joinHeld(ownKey: OwnKey, w: Waiter): Promise<void> {
    this.join(ownKey, w);
    let writerWaits: boolean;
    try {
      writerWaits = await writerQueuedAfter(
        (ownKey.session as EtcdSession).client,
        ownKey.contender(this.lockPrefix),
        ownKey.rev as bigint,
        Date.now() + this.ctx.callTimeout,
      );
    } catch (error) {
      ownKey.waiters.delete(w);
      w.fail(this.unavailable('reading the queue failed', error));
      return this.afterLeave(ownKey);
    }
    ownKey.waiters.delete(w);
    if (w.settled) return this.afterLeave(ownKey);
    if (ownKey.state === 'held' && !writerWaits && this.queue.length === 0) {
      ownKey.holders.set(w.request.owner, w.request.onLost);
      return w.settle({ acquired: true, fencingToken: ownKey.rev as bigint });
    }
    if (w.givingUp) w.settle({ acquired: false });
    else this.enqueue(w);
    this.afterLeave(ownKey);
  }

  /**
   * A waiter gives up (leave, or a try-once's signal): it leaves, and settles once we know enough.
   * Wherever it is (a reader's check of a held key may be on its way), it settles busy next.
   */
  private abandon(w: Waiter): void {
    if (w.settled) return;
    w.givingUp = true;
    const queued = this.queue.indexOf(w);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      return this.cleanupFailure
        ? w.fail(this.unavailable('deleting our previous key failed', this.cleanupFailure))
        : w.settle({ acquired: false });
    }
    const ownKey = this.current;
    if (!ownKey || !ownKey.waiters.has(w)) return;
    // no answer since it joined: the next one decides (the core bounds how long)
    if (ownKey.answers <= w.seen && this.cleanupFailure === undefined) return;
    ownKey.waiters.delete(w);
    const failure =
      ownKey.failure ??
      this.cleanupFailure ??
      (ownKey.session && !ownKey.session.healthy
        ? new Error('session keepalives are not being answered')
        : undefined);
    this.settleLeaving(ownKey, () =>
      failure !== undefined
        ? w.fail(this.unavailable('etcd did not answer', failure))
        : w.settle({ acquired: false }),
    );
    this.afterLeave(ownKey);
  }

  /**
   * Settles a waiter that left a queued own key: at once, or after the key is deleted if it was
   * the last.
   */
  private settleLeaving(ownKey: OwnKey, settle: () => void): void {
    if (
      ownKey.key &&
      ownKey.state === 'waiting' &&
      ownKey.waiters.size === 0 &&
      ownKey.holders.size === 0
    )
      ownKey.leaving.push(settle);
    else settle();
  }

  /**
   * After a waiter left: an own key nobody waits for or holds is ended (a cancelled waiter
   * deletes its key).
   */
  private afterLeave(ownKey: OwnKey): void {
    if (ownKey.state === 'ended' || ownKey.waiters.size > 0 || ownKey.holders.size > 0) return;
    ownKey.wake.abort();
    // end() rejects with the first delete attempt's failure for release() to report; nobody
    // releases here, deleteUntilGone keeps retrying, and waiters queued behind see the failure.
    if (ownKey.state === 'held') void this.end(ownKey, true).catch(() => undefined);
  }

  /** Settles the waiters that were giving up, after an answer (busy or failed). */
  private settleGivingUp(ownKey: OwnKey): void {
    for (const w of ownKey.waiters) {
      if (!w.givingUp) w.onBusy?.();
      if (!w.givingUp || ownKey.answers <= w.seen) continue;
      ownKey.waiters.delete(w);
      const failure = ownKey.failure;
      this.settleLeaving(ownKey, () =>
        failure !== undefined
          ? w.fail(this.unavailable('etcd did not answer', failure))
          : w.settle({ acquired: false }),
      );
    }
  }

  /**
   * Queues on etcd until granted or nobody waits any more; then deletes a key nobody wants. Never
   * throws.
   */
  private async run(ownKey: OwnKey): Promise<void> {
    if (this.cleanup) await this.cleanup;
    await contend(ownKey, {
      callTimeout: this.ctx.callTimeout,
      recheckInterval: this.ctx.recheckInterval,
      watches: this.ctx.watches,
      session: () => this.ctx.session(this.fullKey),
      bind: (i, session) => this.bind(i, session),
      lockPrefix: this.lockPrefix,
      settleGivingUp: (i) => this.settleGivingUp(i),
      grant: (i) => this.grant(i),
      fail: (i, error) => {
        for (const w of i.waiters) w.fail(error);
        i.waiters.clear();
      },
    });
    // As in afterLeave: the deletion keeps retrying and its failure reaches the waiters behind it.
    if (ownKey.state === 'waiting') await this.end(ownKey, true).catch(() => undefined);
    for (const settle of ownKey.leaving.splice(0)) settle();
  }

  private grant(ownKey: OwnKey): void {
    ownKey.state = 'held';
    for (const w of ownKey.waiters) {
      ownKey.holders.set(w.request.owner, w.request.onLost);
      w.settle({ acquired: true, fencingToken: ownKey.rev as bigint });
    }
    ownKey.waiters.clear();
  }

  /**
   * Follows the session: a lost session ends held locks at once; waiters re-queue on the next one.
   */
  private bind(ownKey: OwnKey, session: EtcdSession): void {
    ownKey.unsubscribe();
    ownKey.session = session;
    ownKey.key = Buffer.concat([this.lockPrefix, Buffer.from(session.hex)]);
    ownKey.rev = undefined;
    ownKey.unsubscribe = session.onLost((reason, cause) => {
      if (ownKey.state === 'held') this.lost(`the etcd session ended: ${reason}`, cause);
      else if (ownKey.state === 'waiting') ownKey.wake.abort();
    });
  }

  /**
   * Ends an own key. With `remove`, deletes its key (retrying in the background until done or
   * the session ends, since a leftover key would block everyone); the next local owner starts only
   * then. Resolves or rejects with the first attempt, for release() to report.
   */
  private end(ownKey: OwnKey, remove: boolean): Promise<void> {
    if (ownKey.state === 'ended') return Promise.resolve();
    ownKey.state = 'ended';
    ownKey.unsubscribe();
    ownKey.wake.abort();
    if (this.current === ownKey) this.current = undefined;
    if (!remove || !ownKey.key || !ownKey.session) {
      this.serveNext();
      return Promise.resolve();
    }
    const deletion = deleteUntilGone(
      ownKey.session,
      ownKey.key,
      ownKey.rev,
      this.ctx.callTimeout,
      (e) => {
        this.cleanupFailure = e;
      },
    );
    const cleanup = deletion.done;
    this.cleanup = cleanup;
    void cleanup.then(() => {
      if (this.cleanup === cleanup) this.cleanup = undefined;
      this.cleanupFailure = undefined;
      this.serveNext();
    });
    return deletion.first.catch((error: unknown) => {
      throw this.unavailable('deleting the lock key failed', error);
    });
  }

  /**
   * Starts the next local owner(s): the queue head, with the shared waiters right behind a shared
   * head.
   */
  private serveNext(): void {
    if (this.current || this.cleanup) return;
    while (this.queue.length > 0 && this.queue[0].settled) this.queue.shift();
    const head = this.queue.shift();
    if (!head) return this.ctx.idle(this);
    const group = [head];
    while (head.mode === 'shared' && this.queue[0]?.mode === 'shared')
      group.push(this.queue.shift() as Waiter);
    this.start(group);
  }

  private enqueue(w: Waiter): void {
    this.queue.push(w);
    w.onBusy?.();
    this.serveNext();
  }

  private unavailable(what: string, cause: unknown): LockBackendUnavailableError {
    if (cause instanceof LockBackendUnavailableError) return cause;
    return new LockBackendUnavailableError(this.ctx.backend, what, { key: this.fullKey, cause });
  }
}
