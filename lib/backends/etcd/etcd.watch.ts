import type { EtcdClientLike, EtcdWatcherLike } from './etcd.client';
import type { Blocker } from './etcd.ops';

export interface WatchOutcome {
  /** deleted: the blocker went away; recheck: look again (fallback timer, stream trouble); stopped: signal. */
  readonly outcome: 'deleted' | 'recheck' | 'stopped';
  /** Set when the watch stream failed: the waiter cannot currently see etcd. */
  readonly failure?: unknown;
}

/**
 * Waits until `blocker` is deleted, watching from the revision right after `readRevision` (the
 * read that found it), so a delete in between is replayed, never missed. Resolves 'recheck' after
 * `fallbackMs` or when the watch stream drops: the caller re-reads its position, so a lost event
 * can delay a waiter but never strand it. Never rejects.
 */
export function waitForDelete(
  client: EtcdClientLike,
  blocker: Blocker,
  readRevision: string,
  signal: AbortSignal,
  fallbackMs: number,
): Promise<WatchOutcome> {
  const fromRevision = (BigInt(readRevision) + 1n).toString();
  return new Promise((resolve) => {
    if (signal.aborted) return resolve({ outcome: 'stopped' });
    let watcher: EtcdWatcherLike | undefined;
    let done = false;
    const finish = (result: WatchOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
      // Detaching never blocks us: if the stream is down it completes when the stream comes back.
      const w = watcher;
      if (w) Promise.resolve().then(() => w.cancel()).catch(() => undefined);
      resolve(result);
    };
    const onStop = () => finish({ outcome: 'stopped' });
    const timer = setTimeout(() => finish({ outcome: 'recheck' }), fallbackMs);
    signal.addEventListener('abort', onStop, { once: true });
    try {
      watcher = client.watch().key(blocker.key).startRevision(fromRevision).only('delete').watcher();
      watcher.on('delete', () => finish({ outcome: 'deleted' }));
      watcher.on('disconnected', (error) => finish({ outcome: 'recheck', failure: error ?? new Error('watch stream disconnected') }));
      // A listener stays attached after we finish: an 'error' without one would be thrown by EventEmitter.
      watcher.on('error', (error) => finish({ outcome: 'recheck', failure: error }));
    } catch (error) {
      finish({ outcome: 'recheck', failure: error });
    }
  });
}
