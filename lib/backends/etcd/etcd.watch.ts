import type { EtcdClientLike, EtcdWatcherLike } from './etcd.client';
import { blockerGone, type Blocker } from './etcd.ops';

export interface WatchOutcome {
  /**
   * deleted: the blocker went away; recheck: look again (fallback timer, stream trouble); stopped:
   * signal.
   */
  readonly outcome: 'deleted' | 'recheck' | 'stopped';
  /** Set when the watch stream failed: the waiter cannot currently see etcd. */
  readonly failure?: unknown;
}

/**
 * Waits until `blocker` is deleted. Resolves 'recheck' after `fallbackMs` or when the watch stream
 * drops: the caller re-reads its position, so a lost event can delay a waiter but never strand it.
 * Never rejects.
 *
 * Why the watch starts "now" and not at `readRevision + 1` (as Go's Mutex does): etcd puts a watch
 * that starts in the past into its *unsynced* group, which it catches up only every 100 ms; under
 * contention the revision moves between our read and the watch's creation, so the predecessor's
 * delete reached the waiter 0-100 ms late (measured: the p90 of a handoff). A watch from now is
 * synced at once and delivers the delete as it commits. The gap it leaves, (readRevision, W] with
 * W the revision the server created the watch at, is closed by one read of the blocker when W
 * moved past our read: gone means deleted in the gap; present means any delete comes after W.
 */
export function waitForDelete(
  client: EtcdClientLike,
  blocker: Blocker,
  readRevision: string,
  signal: AbortSignal,
  fallbackMs: number,
  callTimeout: number,
): Promise<WatchOutcome> {
  return watchOnce<WatchOutcome>(
    signal,
    fallbackMs,
    (finish) => {
      const watcher = client.watch().key(blocker.key).only('delete').watcher();
      watcher.on('delete', () => finish({ outcome: 'deleted' }));
      return watcher;
    },
    (watchRevision, finish) => {
      if (BigInt(watchRevision) <= BigInt(readRevision)) return; // nothing happened in between
      blockerGone(client, blocker, watchRevision, Date.now() + callTimeout).then(
        (gone) => gone && finish({ outcome: 'deleted' }),
        (error: unknown) => finish({ outcome: 'recheck', failure: error }),
      );
    },
  );
}

/**
 * The part every wait on a watch shares: ONE watcher (made by `open`, which attaches its own event
 * handlers), a fallback timer ('recheck' after `fallbackMs`), the stop signal ('stopped'), and
 * exactly one outcome, after which the watcher is cancelled. A dropped stream or a watch error
 * (compaction cancels a watch with one) answers 'recheck' with the failure. `created` runs once, at
 * the watch's first creation, with the revision the server created it at: the gap (read, created]
 * to close (etcd3 resumes a reconnected watch where it stopped, so only the first creation leaves
 * one). Never rejects.
 */
export function watchOnce<T extends { readonly outcome: string; readonly failure?: unknown }>(
  signal: AbortSignal,
  fallbackMs: number,
  open: (finish: (result: T) => void) => EtcdWatcherLike,
  created: (watchRevision: string, finish: (result: T) => void) => void,
): Promise<T> {
  const answer = (outcome: 'stopped' | 'recheck', failure?: unknown) =>
    (failure === undefined ? { outcome } : { outcome, failure }) as T;
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(answer('stopped'));
    let watcher: EtcdWatcherLike | undefined;
    let done = false;
    let isCreated = false;
    const finish = (result: T) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
      // Detaching never blocks us: if the stream is down it completes when the stream comes back.
      // A failed cancel is safe to drop: etcd3 drops the watcher with its stream, nothing waits on
      // it.
      const w = watcher;
      if (w)
        Promise.resolve()
          .then(() => w.cancel())
          .catch(() => undefined);
      resolve(result);
    };
    const onStop = () => finish(answer('stopped'));
    const timer = setTimeout(() => finish(answer('recheck')), fallbackMs);
    signal.addEventListener('abort', onStop, { once: true });
    try {
      watcher = open(finish);
      watcher.on('connected', (res) => {
        if (isCreated) return;
        isCreated = true;
        created(res.header.revision, finish);
      });
      watcher.on('disconnected', (error) =>
        finish(answer('recheck', error ?? new Error('watch stream disconnected'))),
      );
      // A listener stays attached after we finish: an 'error' without one would be thrown by
      // EventEmitter.
      watcher.on('error', (error) => finish(answer('recheck', error)));
    } catch (error) {
      finish(answer('recheck', error));
    }
  });
}
