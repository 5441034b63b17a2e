import { sleepFor } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
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

  /** Queues a permit on etcd until granted, or (tryOnce / signal aborted) busy after an answer. */
  async acquire(
    request: BackendAttempt,
    permits: number,
    tryOnce: boolean,
  ): Promise<BackendAcquireResult> {
    const semPrefix = Buffer.from(etcdSemaphorePrefix(request.key, this.ctx.prefix));
    let session: EtcdSession | undefined;
    let key: Buffer | undefined;
    let rev: bigint | undefined;
    let answered = false;
    let waited = false;
    let failure: unknown;
    let backoff = 20;
    for (;;) {
      if (answered && (tryOnce || request.signal.aborted)) break;
      const wake = new AbortController();
      const stop = () => wake.abort();
      request.signal.addEventListener('abort', stop, { once: true });
      let unsubscribe: () => unknown = () => undefined;
      try {
        const s = await this.ctx.session(request.key);
        if (s !== session) {
          // A new session: a permit of the old one died with its lease.
          session = s;
          key = Buffer.concat([semPrefix, Buffer.from(`${s.hex}_${request.owner}`)]);
          rev = undefined;
        }
        unsubscribe = s.onLost(stop);
        const pos = await this.readPermit(s, semPrefix, key as Buffer, rev, permits);
        answered = true;
        failure = undefined;
        backoff = 20;
        rev = pos.exists ? pos.rev : undefined;
        if (!pos.exists || !s.alive) continue; // deleted behind our back: queue again, at the back
        if (pos.granted) return this.grant(request, s, key as Buffer, pos.rev, permits, waited);
        if (tryOnce || request.signal.aborted || !pos.watch) continue;
        waited = true;
        const watched = await this.watchPermit(s, pos.watch, pos.revision, wake.signal);
        if (watched.failure !== undefined) {
          failure = watched.failure;
          await sleepFor(Math.random() * backoff, wake.signal);
          backoff = Math.min(backoff * 2, 1_000);
        }
      } catch (error) {
        if (error instanceof InvalidLockOptionsError) throw error;
        answered = true;
        failure = error;
        await sleepFor(tryOnce ? 0 : Math.random() * backoff, wake.signal);
        backoff = Math.min(backoff * 2, 1_000);
      } finally {
        unsubscribe();
        request.signal.removeEventListener('abort', stop);
      }
    }
    return this.giveUp(request, session, key, failure);
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
    semPrefix: Buffer,
    key: Buffer,
    rev: bigint | undefined,
    permits: number,
  ): Promise<PermitPosition> {
    const deadline = Date.now() + this.ctx.callTimeout;
    return rev === undefined
      ? createPermit(s.client, semPrefix, key, s.id, permits, deadline)
      : permitPosition(s.client, semPrefix, key, rev, permits, deadline);
  }

  /** Waits until our place may have changed (or the recheck interval passes); never rejects. */
  private watchPermit(
    s: EtcdSession,
    watch: NonNullable<PermitPosition['watch']>,
    readRevision: string,
    signal: AbortSignal,
  ): ReturnType<typeof waitForPermitChange> {
    return waitForPermitChange(s.client, watch, readRevision, signal, this.ctx.recheckInterval);
  }

  /** Ends a wait not granted: removes our permit, then answers busy or the last failure. */
  private async giveUp(
    request: BackendAttempt,
    session: EtcdSession | undefined,
    key: Buffer | undefined,
    failure: unknown,
  ): Promise<BackendAcquireResult> {
    // Giving up: our permit (if a create may have reached etcd) must not stay behind, or it would
    // hold a permit or a place in line until our lease ends. The key is ours alone (lease + owner).
    if (session && key && session.alive) {
      const deletion = deleteUntilGone(session, key, undefined, this.ctx.callTimeout, () => {
        // each failure is retried by deleteUntilGone; the first one is reported below
      });
      try {
        await deletion.first;
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw this.unavailable(request.key, 'etcd did not answer', failure);
    return { acquired: false };
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
