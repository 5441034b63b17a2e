import type { EtcdClientLike } from './etcd.client';
import { allOlder, readPosition, type Blocker, type Contender } from './etcd.ops';
import type { QueueView, QueueWatches, RangeDelete } from './etcd.queue-watch';
import type { WatchOutcome } from './etcd.watch';

/** A queue watch answers 'granted' (we hold, proven from its events) or as waitForDelete. */
export interface TurnOutcome {
  readonly outcome: 'granted' | WatchOutcome['outcome'];
  readonly failure?: unknown;
}

const hex = (key: Buffer) => key.toString('hex');

/**
 * Waits for our turn without a read after the predecessor's delete, on the lock's queue watch
 * (etcd.queue-watch.ts: ONE watch over the lock's whole range `NAME/`, deletes only, shared by
 * this backend's waiters and kept between waits). etcd delivers one watcher's events complete
 * and in revision order from its start, so the waiter keeps the set of older contenders itself:
 * - the set is complete at the read it starts from (a listing of every older contender; none can
 *   be added later: a new key gets a newer create revision than ours);
 * - every delete after that read reaches us, in order (the watch's kept deletes since the read,
 *   then live ones), including a delete of OUR key (lease revoked or expired, an operator's
 *   delete): then we answer 'recheck' and the caller's re-read sees the key gone and queues again,
 *   never granting on a key that is gone;
 * - so when the last older contender's delete arrives and ours has not, we are the oldest at that
 *   revision: held, exactly Go's Mutex rule, with our create revision still the fencing token.
 * A watch that etcd created at W past our read R (a new watch: it starts "now", see etcd.watch.ts)
 * leaves (R, W] unseen: one read at >= W (serializable when that member is current) closes it, as
 * it re-lists the older contenders and checks our key. A dropped stream or a watch etcd cancels
 * (compaction) answers 'recheck' (the caller re-reads, the old path). Never rejects.
 */
export function waitForTurn(
  watches: QueueWatches,
  client: EtcdClientLike,
  c: Contender,
  rev: bigint,
  older: readonly Blocker[],
  readRevision: string,
  signal: AbortSignal,
  fallbackMs: number,
  callTimeout: number,
): Promise<TurnOutcome> {
  const own = hex(c.key);
  return new Promise((resolve) => {
    if (signal.aborted) return resolve({ outcome: 'stopped' });
    // The older contenders still to go, once a listing covers the watch's start.
    let waitingFor: Set<string> | undefined;
    let listedAt = 0n;
    let done = false;
    let unsubscribe = () => undefined as unknown;
    const finish = (result: TurnOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
      unsubscribe();
      resolve(result);
    };
    // A delete at or before the listing's revision is in the listing already (and may be of a
    // listed key deleted before it was created again): never apply it.
    const apply = (d: RangeDelete) => {
      // Our own key went: we must not hold. Re-read, re-queue. (A delete before our create
      // revision is of an earlier key of ours.)
      if (d.key === own) return d.rev > rev ? finish({ outcome: 'recheck' }) : undefined;
      if (!waitingFor || d.rev <= listedAt) return;
      waitingFor.delete(d.key);
      if (waitingFor.size === 0) finish({ outcome: 'granted' });
    };
    const listed = (list: readonly Blocker[], at: string, view: QueueView) => {
      listedAt = BigInt(at);
      // Deletes past the read were dropped from the kept ones (a very long read): re-read.
      if (view.from > listedAt) return finish({ outcome: 'recheck' });
      waitingFor = new Set(list.map((b) => hex(b.key)));
      for (const d of view.history) if (!done) apply(d);
      if (!done && waitingFor.size === 0) finish({ outcome: 'granted' });
    };
    const onStop = () => finish({ outcome: 'stopped' });
    const timer = setTimeout(() => finish({ outcome: 'recheck' }), fallbackMs);
    signal.addEventListener('abort', onStop, { once: true });
    unsubscribe = watches.subscribe(c.lockPrefix, {
      ready: (view) => {
        if (view.from <= BigInt(readRevision)) return listed(older, readRevision, view);
        olderContenders(client, c, rev, String(view.from), Date.now() + callTimeout).then(
          (l) => (l ? listed(l.older, l.revision, view) : finish({ outcome: 'recheck' })),
          (error: unknown) => finish({ outcome: 'recheck', failure: error }),
        );
      },
      deleted: apply,
      broken: (failure) => finish({ outcome: 'recheck', failure }),
    });
    if (done) unsubscribe();
  });
}

/**
 * For etcd.turn.ts: every older contender at a revision >= `atLeast` (serializable first, again
 * linearizably when that member's view is older), with the revision read; undefined when our key
 * is gone or the older contenders are too many for one page (the caller falls back to re-reading).
 */
export async function olderContenders(
  client: EtcdClientLike,
  c: Contender,
  rev: bigint,
  atLeast: string,
  deadline: number,
): Promise<{ older: Blocker[]; revision: string } | undefined> {
  let res = await readPosition(client, c, rev, true, deadline);
  if (BigInt(res.header.revision) < BigInt(atLeast))
    res = await readPosition(client, c, rev, false, deadline);
  const own = res.responses[0].response_range.kvs[0];
  if (!own || BigInt(own.create_revision) !== rev) return undefined;
  const page = res.responses[1].response_range;
  const older = allOlder(c, page.kvs, page.more);
  return older && { older, revision: res.header.revision };
}
