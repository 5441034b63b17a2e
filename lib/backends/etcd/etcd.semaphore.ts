import { sleepFor } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
  ReleaseListener,
} from '../../interfaces/lock-backend.interface';
import { deleteUntilGone } from './etcd.cleanup';
import { etcdSemaphorePrefix } from './etcd.keys';
import {
  createPermit,
  markPermit,
  permitPosition,
  waitForPermitChange,
  type PermitPosition,
} from './etcd.permits';
import type { EtcdSession } from './etcd.session';

export interface SemaphoreContext {
  readonly backend: string;
  readonly prefix: string;
  readonly callTimeout: number;
  /** Re-read the position at least this often while watching (fallback for a lost event). */
  readonly recheckInterval: number;
  session(key?: string): Promise<EtcdSession>;
}

/** One granted permit of this backend. */
export interface HeldPermit {
  readonly fullKey: string;
  readonly key: Buffer;
  readonly rev: bigint;
  readonly session: EtcdSession;
  readonly onLost: BackendAttempt['onLost'];
  unsubscribe(): void;
}

/**
 * Native semaphores on etcd (see etcd.permits.ts for the layout and who watches what). Unlike a
 * lock NAME, whose etcdctl-compatible key allows one contender per session, every grant here is its
 * own key `<NAME>%sem/<lease hex>_<owner>`, so owners of one process need no local line: each
 * request queues on etcd by itself. Fencing token = the permit's create revision (every permit is a
 * new key, and revisions only grow); a permit dies with the session lease, as a lock's key does.
 */
export class EtcdSemaphores {
  private readonly held = new Map<string, HeldPermit>();
  /** Permits of requests with wait > 0 between the engine's attempts, by owner (see attempt). */
  private readonly queued = new Map<string, QueuedPermit>();

  constructor(private readonly ctx: SemaphoreContext) {}

  private static id(fullKey: string, owner: string): string {
    return `${fullKey}\u0000${owner}`;
  }

  heldBy(lock: BackendLock): HeldPermit | undefined {
    return this.held.get(EtcdSemaphores.id(lock.key, lock.owner));
  }

  /** Permits of `fullKey` held here (forceRelease tells them their loss at once). */
  heldUnder(fullKey: string): HeldPermit[] {
    return [...this.held.values()].filter((s) => s.fullKey === fullKey);
  }

  /**
   * One attempt: the first creates our permit, a waiting request's later ones re-read its place
   * (one txn each). Not granted: without a wait the permit is deleted again (busy, or the failure);
   * a waiting request's permit stays queued until granted or leave, and its busy answer's wake is
   * the watch on what its place waits for (or the session's end).
   */
  async attempt(request: BackendAttempt, permits: number): Promise<BackendAcquireResult> {
    const { owner } = request;
    const once = !request.wait;
    let q = once ? undefined : this.queued.get(owner);
    q?.wake?.dispose();
    const s = await this.ctx.session(request.key);
    if (!q || q.session !== s) {
      // A new session: a permit of the old one died with its lease.
      q = { session: s, key: this.permitKey(request, s), rev: undefined, backoff: 20, waited: !!q };
      if (!once) this.queued.set(owner, q);
    }
    let pos: PermitPosition | undefined;
    let failure: unknown;
    try {
      // A permit deleted behind our back queues again, at the back.
      do {
        pos = await this.readPermit(s, request.key, q.key, q.rev, permits);
        q.rev = pos.exists ? pos.rev : undefined;
      } while (!pos.exists);
    } catch (error) {
      if (!once || error instanceof InvalidLockOptionsError) throw error;
      failure = error;
    }
    // A session that died since the read took the permit with it: not granted (the next attempt
    // queues on a new session).
    if (pos?.granted && s.alive) {
      this.queued.delete(owner);
      return this.grant(request, s, q.key, pos.rev, permits, q.waited);
    }
    if (once || !pos?.watch) {
      failure ??= await this.remove(s, q.key);
      if (failure !== undefined)
        throw this.unavailable(request.key, 'etcd did not answer', failure);
      return { acquired: false };
    }
    q.waited = true;
    q.wake = new PermitWake(s, q, this.watch(s, pos.watch, pos.revision));
    return { acquired: false, wake: q.wake };
  }

  /** A waiter that gave up: its permit is deleted (it would hold a place until our lease ends). */
  async leave(owner: string): Promise<void> {
    const q = this.queued.get(owner);
    if (!q) return;
    this.queued.delete(owner);
    q.wake?.dispose();
    await this.remove(q.session, q.key);
  }

  /** Renewal found the permit gone, or an operator freed it: its holder has lost it. */
  lost(permit: HeldPermit, reason: string, cause?: unknown): void {
    const id = [...this.held.entries()].find(([, s]) => s === permit)?.[0];
    if (id === undefined) return;
    this.held.delete(id);
    permit.unsubscribe();
    permit.onLost(reason, cause);
  }

  /** Owner-checked release: deletes the permit (only the key we created). */
  async release(lock: BackendLock): Promise<void> {
    const id = EtcdSemaphores.id(lock.key, lock.owner);
    const permit = this.held.get(id);
    if (!permit) return;
    this.held.delete(id);
    permit.unsubscribe();
    if (!permit.session.alive) return; // the lease is gone and took the permit with it
    const deletion = deleteUntilGone(
      permit.session,
      permit.key,
      permit.rev,
      this.ctx.callTimeout,
      () => {
        // retried until gone; release() reports the first failure
      },
    );
    await deletion.first.catch((error: unknown) => {
      throw this.unavailable(lock.key, 'deleting the semaphore permit failed', error);
    });
  }

  /** One txn: creates our permit (no `rev` yet) or re-reads the position of the one we created. */
  private readPermit(
    s: EtcdSession,
    fullKey: string,
    key: Buffer,
    rev: bigint | undefined,
    permits: number,
  ): Promise<PermitPosition> {
    const semPrefix = Buffer.from(etcdSemaphorePrefix(fullKey, this.ctx.prefix));
    const deadline = Date.now() + this.ctx.callTimeout;
    return rev === undefined
      ? createPermit(s.client, semPrefix, key, s.id, permits, deadline)
      : permitPosition(s.client, semPrefix, key, rev, permits, deadline);
  }

  /** `<NAME>%sem/<lease hex>_<owner>`: ours alone (lease + owner). */
  private permitKey(request: BackendAttempt, s: EtcdSession): Buffer {
    const semPrefix = etcdSemaphorePrefix(request.key, this.ctx.prefix);
    return Buffer.from(`${semPrefix}${s.hex}_${request.owner}`);
  }

  /** Waits until our place may have changed (or the recheck interval passes); never rejects. */
  private watch(
    s: EtcdSession,
    watch: NonNullable<PermitPosition['watch']>,
    readRevision: string,
  ): (signal: AbortSignal) => ReturnType<typeof waitForPermitChange> {
    return (signal) =>
      waitForPermitChange(s.client, watch, readRevision, signal, this.ctx.recheckInterval);
  }

  /** Deletes a permit we may have created (not granted); the first failure, if any. */
  private async remove(session: EtcdSession, key: Buffer): Promise<unknown> {
    if (!session.alive) return undefined; // the lease is gone and took the permit with it
    const deletion = deleteUntilGone(session, key, undefined, this.ctx.callTimeout, () => {
      // each failure is retried by deleteUntilGone; the first one is reported
    });
    return deletion.first.then(
      () => undefined,
      (error: unknown) => error,
    );
  }

  private grant(
    request: BackendAttempt,
    session: EtcdSession,
    key: Buffer,
    rev: bigint,
    permits: number,
    waited: boolean,
  ): BackendAcquireResult {
    const permit: HeldPermit = {
      fullKey: request.key,
      key,
      rev,
      session,
      onLost: request.onLost,
      unsubscribe: () => undefined,
    };
    permit.unsubscribe = session.onLost((reason, cause) =>
      this.lost(permit, `the etcd session ended: ${reason}`, cause),
    );
    this.held.set(EtcdSemaphores.id(request.key, request.owner), permit);
    // A permit granted after waiting was a waiter someone may be watching: the mark wakes it.
    // Not awaited: the grant does not depend on it. Safe to drop a failure: the mark only hurries
    // the successor, which re-reads its position every recheckInterval anyway (a failed mark
    // delays it by at most that), and our permit is unchanged by it.
    if (waited)
      markPermit(
        session.client,
        key,
        rev,
        session.id,
        permits,
        Date.now() + this.ctx.callTimeout,
      ).catch(() => undefined);
    return { acquired: true, fencingToken: rev };
  }

  private unavailable(key: string, what: string, cause: unknown): LockBackendUnavailableError {
    if (cause instanceof LockBackendUnavailableError) return cause;
    return new LockBackendUnavailableError(this.ctx.backend, what, { key, cause });
  }
}

/** A queued permit between the engine's attempts (EtcdSemaphores.step). */
interface QueuedPermit {
  readonly session: EtcdSession;
  readonly key: Buffer;
  rev: bigint | undefined;
  /** Jittered backoff (ms) after a watch that failed, doubled per failure. */
  backoff: number;
  /** An earlier attempt answered busy (the grant then marks the permit for its successor). */
  waited: boolean;
  wake?: PermitWake;
}

/**
 * The busy answer's wake: the watch on what our place waits for, or the end of the session. A
 * watch whose stream failed wakes after a jittered backoff, so a member that is down is not
 * re-read in a spin.
 */
class PermitWake implements ReleaseListener {
  private readonly stop = new AbortController();
  private readonly changed: Promise<void>;
  private readonly unsubscribe: () => void;

  constructor(
    session: EtcdSession,
    q: QueuedPermit,
    watch: (signal: AbortSignal) => ReturnType<typeof waitForPermitChange>,
  ) {
    this.unsubscribe = session.onLost(() => this.stop.abort());
    this.changed = watch(this.stop.signal).then(async (watched) => {
      if (watched.failure === undefined) q.backoff = 20;
      else {
        await sleepFor(Math.random() * q.backoff, this.stop.signal);
        q.backoff = Math.min(q.backoff * 2, 1_000);
      }
    });
  }

  wait(ms: number, signal: AbortSignal): Promise<void> {
    return sleepFor(ms, signal, (wake) => void this.changed.then(wake));
  }

  dispose(): void {
    this.unsubscribe();
    this.stop.abort();
  }
}
