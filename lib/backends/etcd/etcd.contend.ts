import { sleepFor } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { EtcdClientLike } from './etcd.client';
import type { OwnKey } from './etcd.own-key';
import {
  createContender,
  findBlocker,
  type Blocker,
  type Contender,
  type Position,
} from './etcd.ops';
import type { QueueWatches } from './etcd.queue-watch';
import type { EtcdSession } from './etcd.session';
import { waitForTurn, type TurnOutcome } from './etcd.turn';
import { waitForDelete } from './etcd.watch';

/** What the queue loop needs of its LocalQueue. */
export interface ContendHooks {
  readonly callTimeout: number;
  /** Re-read the position at least this often while watching (fallback for a lost event). */
  readonly recheckInterval: number;
  /** The backend's queue watches (one per lock, shared by its waiters). */
  readonly watches: QueueWatches;
  /** The live session (a new one after a loss). */
  session(): Promise<EtcdSession>;
  /** Attaches the own key to `session` (its key becomes `NAME/<session lease>`). */
  bind(ownKey: OwnKey, session: EtcdSession): void;
  /** The lock's range `NAME/`. */
  readonly lockPrefix: Buffer;
  /** Settles the try-once waiters after an answer that did not grant. */
  settleGivingUp(ownKey: OwnKey): void;
  grant(ownKey: OwnKey): void;
  /** Fails every waiter (a configuration error: retrying cannot help). */
  fail(ownKey: OwnKey, error: unknown): void;
}

/**
 * Queues one own key on etcd until it is granted or nobody waits for it any more: create our
 * key and read our position (one txn); while an older contender blocks us, watch only that one
 * key and re-read our position when it goes (Go's concurrency.Mutex: waitDeletes). Failures are
 * retried with jittered backoff while waiters remain; each answer (good or bad) is counted, so a
 * try-once waiter learns "busy" or "unreachable" from the first one. Never throws.
 */
export async function contend(ownKey: OwnKey, hooks: ContendHooks): Promise<void> {
  let backoff = 20;
  let watchBackoff = 20;
  while (ownKey.state === 'waiting' && ownKey.waiters.size > 0) {
    const wake = (ownKey.wake = new AbortController());
    try {
      const session = await hooks.session();
      if (ownKey.session !== session) hooks.bind(ownKey, session);
      const c = ownKey.contender(hooks.lockPrefix);
      const client = session.client;
      const deadline = Date.now() + hooks.callTimeout;
      const pos =
        ownKey.rev === undefined
          ? await createContender(client, c, session.id, deadline)
          : await findBlocker(client, c, ownKey.rev, deadline);
      ownKey.answers++;
      ownKey.failure = undefined;
      backoff = 20;
      if (ownKey.state !== 'waiting' || !session.alive) continue;
      // Our key vanished while we queued (deleted by an operator): queue again, at the back.
      ownKey.rev = pos.exists ? pos.rev : undefined;
      if (!pos.exists) continue;
      if (ownKey.waiters.size === 0) return;
      if (!pos.blocker) return hooks.grant(ownKey);
      hooks.settleGivingUp(ownKey);
      if (ownKey.waiters.size === 0) return;
      const watched = await watchTurn(client, c, pos, pos.blocker, wake.signal, hooks);
      if (watched.outcome === 'granted') {
        // Proven at the revision of the last older contender's delete: our key lived, none older.
        if (ownKey.state !== 'waiting' || !session.alive) continue;
        if (ownKey.waiters.size === 0) return;
        return hooks.grant(ownKey);
      }
      if (watched.failure === undefined) {
        watchBackoff = 20;
      } else {
        // The watch stream is down (its member died, say): re-read, but do not spin while it
        // reconnects.
        ownKey.failure = watched.failure;
        await sleepFor(Math.random() * watchBackoff, wake.signal);
        watchBackoff = Math.min(watchBackoff * 2, 1_000);
      }
    } catch (error) {
      if (error instanceof InvalidLockOptionsError) return hooks.fail(ownKey, error);
      ownKey.answers++;
      ownKey.failure = error;
      hooks.settleGivingUp(ownKey);
      await sleepFor(Math.random() * backoff, wake.signal);
      backoff = Math.min(backoff * 2, 1_000);
    }
  }
}

/** Waits for our turn behind `blocker` (the older contender `pos` names); never rejects. */
function watchTurn(
  client: EtcdClientLike,
  c: Contender,
  pos: Position,
  blocker: Blocker,
  signal: AbortSignal,
  hooks: ContendHooks,
): Promise<TurnOutcome> {
  // Few older contenders: one watch over the lock's range proves our turn from its events
  // (no re-read after the predecessor's delete); else watch the predecessor and re-read.
  return pos.older
    ? waitForTurn(
        hooks.watches,
        client,
        c,
        pos.rev,
        pos.older,
        pos.revision,
        signal,
        hooks.recheckInterval,
        hooks.callTimeout,
      )
    : waitForDelete(
        client,
        blocker,
        pos.revision,
        signal,
        hooks.recheckInterval,
        hooks.callTimeout,
      );
}
