import type { EtcdClientLike } from './etcd.client';
import { allOlder, readPosition, type Blocker, type Contender } from './etcd.ops';
import { watchOnce, type WatchOutcome } from './etcd.watch';

/** A queue watch answers 'granted' (we hold, proven from its events) or as waitForDelete. */
export interface TurnOutcome {
  readonly outcome: 'granted' | WatchOutcome['outcome'];
  readonly failure?: unknown;
}

const hex = (key: Buffer) => key.toString('hex');

/**
 * Waits for our turn without a read after the predecessor's delete: ONE watch over the
 * lock's whole range `NAME/`, deletes only. etcd delivers one watcher's events complete and in
 * revision order from its start, so the waiter keeps the set of older contenders itself:
 * - the set is complete at the read it starts from (a listing of every older contender; none can
 *   be added later: a new key gets a newer create revision than ours);
 * - every delete after that read reaches us, in order, including a delete of OUR key (lease
 *   revoked or expired, an operator's delete): then we answer 'recheck' and the caller's re-read
 *   sees the key gone and queues again, never granting on a key that is gone;
 * - so when the last older contender's delete arrives and ours has not, we are the oldest at that
 *   revision: held, exactly Go's Mutex rule, with our create revision still the fencing token.
 * The watch starts "now" (synced, see etcd.watch.ts); when the server created it at W past our read
 * R, one read at >= W (serializable when that member is current) closes (R, W]: it re-lists the
 * older contenders and checks our key. Compaction or a dropped stream cancels the watch: 'recheck'
 * (the caller re-reads, the old path). Cost: every such waiter sees every delete of its lock, so
 * callers use it only while few contenders are older (TURN_WATCH_MAX, ops.ts). Never rejects.
 */
export function waitForTurn(
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
  // Deletes seen so far (key, revision), and the older contenders still to go once listed.
  const deletes: { k: string; rev: bigint }[] = [];
  let waitingFor: Set<string> | undefined; // undefined until a listing covers the watch's start
  let listedAt = 0n;
  // A delete at or before the listing's revision is in the listing already (and may be an older
  // incarnation of a listed key, e.g. when the watch's member lags the read's): never apply it.
  const check = (finish: (result: TurnOutcome) => void) => {
    if (!waitingFor) return;
    for (const d of deletes.splice(0)) if (d.rev > listedAt) waitingFor.delete(d.k);
    if (waitingFor.size === 0) finish({ outcome: 'granted' });
  };
  const listed = (list: readonly Blocker[], at: string, finish: (r: TurnOutcome) => void) => {
    waitingFor = new Set(list.map((b) => hex(b.key)));
    listedAt = BigInt(at);
    check(finish);
  };
  return watchOnce<TurnOutcome>(
    signal,
    fallbackMs,
    (finish) => {
      const watcher = client.watch().prefix(c.lockPrefix).only('delete').watcher();
      watcher.on('delete', (kv) => {
        const k = hex(kv.key);
        const at = BigInt(kv.mod_revision);
        // Our own key went (lease revoked or expired, deleted): we must not hold. Re-read,
        // re-queue. (A delete before our create revision is an earlier incarnation of our key.)
        if (k === own) return at > rev ? finish({ outcome: 'recheck' }) : undefined;
        deletes.push({ k, rev: at });
        check(finish);
      });
      return watcher;
    },
    // Only the first creation leaves a gap; a reconnect ends this wait anyway ('disconnected').
    (watchRevision, finish) => {
      if (BigInt(watchRevision) <= BigInt(readRevision)) return listed(older, readRevision, finish);
      olderContenders(client, c, rev, watchRevision, Date.now() + callTimeout).then(
        (l) => (l ? listed(l.older, l.revision, finish) : finish({ outcome: 'recheck' })),
        (error: unknown) => finish({ outcome: 'recheck', failure: error }),
      );
    },
  );
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
