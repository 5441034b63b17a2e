import type { EtcdClientLike, EtcdWatcherLike } from './etcd.client';

/** One delete under a lock's range: the key (hex) and the revision it was deleted at. */
export interface RangeDelete {
  readonly key: string;
  readonly rev: bigint;
}

/** A waiter's view of its lock's queue watch: the deletes kept, complete past `from`. */
export interface QueueView {
  readonly from: bigint;
  readonly history: readonly RangeDelete[];
}

/** What a waiter hears from its lock's queue watch. */
export interface QueueListener {
  /** The watch serves (its view stays current: replay the kept deletes past your read). */
  ready(view: QueueView): void;
  /** A delete, in revision order, after `ready`. */
  deleted(d: RangeDelete): void;
  /** The watch stopped (stream dropped, watch cancelled by etcd): re-read, the old path. */
  broken(failure: unknown): void;
}

/** Deletes kept per watch for waiters that subscribe after they happened (a ring). */
const HISTORY = 1_024;
/** A watch nobody listens to lives on this long: the next wait on the lock needs no new one. */
const LINGER_MS = 2_000;

/**
 * ONE watch over a lock's whole range `NAME/` (deletes only) per lock per backend, shared by its
 * waiters and kept between waits (etcd.turn.ts proves a waiter's turn from its events). A watch
 * per wait cost two watch messages per handoff (create, cancel) and, since a new watch starts
 * after the waiter's read, one more read to close the gap between them; a watch that outlives
 * the wait has neither: a waiter whose read is at or after the watch's start (the usual case)
 * replays the deletes kept since its read and follows the rest live. Every process with waiters
 * on a lock hears each delete of it (one event, no request).
 */
export class QueueWatches {
  private readonly watches = new Map<string, QueueWatch>();

  constructor(private readonly client: () => EtcdClientLike | undefined) {}

  /** Listens to the deletes of the range `lockPrefix`; returns the unsubscribe. */
  subscribe(lockPrefix: Buffer, listener: QueueListener): () => void {
    const id = lockPrefix.toString('hex');
    let w = this.watches.get(id);
    if (!w) {
      const client = this.client();
      if (!client) {
        listener.broken(new Error('no etcd client'));
        return () => undefined;
      }
      w = new QueueWatch(client, lockPrefix, () => {
        if (this.watches.get(id) === w) this.watches.delete(id);
      });
      this.watches.set(id, w);
    }
    return w.add(listener);
  }

  close(): void {
    for (const w of [...this.watches.values()]) w.stop(new Error('the backend was closed'));
  }
}

class QueueWatch implements QueueView {
  private readonly listeners = new Set<QueueListener>();
  readonly history: RangeDelete[] = [];
  /** Revision the watch started after (set once etcd created it); history is complete past it. */
  from = -1n;
  private created = false;
  private readonly watcher: EtcdWatcherLike;
  private linger: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    client: EtcdClientLike,
    lockPrefix: Buffer,
    private readonly gone: () => void,
  ) {
    this.watcher = client.watch().prefix(lockPrefix).only('delete').watcher();
    this.watcher.on('connected', (res) => {
      // Only the first creation starts the history: a reconnect could leave a gap, so it stops.
      if (this.created) return this.stop(new Error('watch stream reconnected'));
      this.created = true;
      this.from = BigInt(res.header.revision);
      for (const l of [...this.listeners]) l.ready(this);
    });
    this.watcher.on('delete', (kv) => {
      const d = { key: kv.key.toString('hex'), rev: BigInt(kv.mod_revision) };
      this.history.push(d);
      if (this.history.length > HISTORY) {
        const dropped = this.history.shift() as RangeDelete;
        if (dropped.rev > this.from) this.from = dropped.rev;
      }
      if (this.created) for (const l of [...this.listeners]) l.deleted(d);
    });
    this.watcher.on('disconnected', (e) => this.stop(e ?? new Error('watch stream disconnected')));
    this.watcher.on('error', (e) => this.stop(e));
  }

  add(listener: QueueListener): () => void {
    if (this.linger) clearTimeout(this.linger);
    this.linger = undefined;
    this.listeners.add(listener);
    if (this.created) listener.ready(this);
    return () => {
      if (!this.listeners.delete(listener) || this.listeners.size > 0 || this.stopped) return;
      this.linger = setTimeout(() => this.stop(), LINGER_MS);
      this.linger.unref();
    };
  }

  /** Ends the watch; with a failure, its listeners hear it (they re-read). */
  stop(failure?: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.linger) clearTimeout(this.linger);
    this.gone();
    const listeners = [...this.listeners];
    this.listeners.clear();
    // A failed cancel is safe to drop: etcd3 drops the watcher with its stream.
    Promise.resolve()
      .then(() => this.watcher.cancel())
      .catch(() => undefined);
    for (const l of listeners) l.broken(failure ?? new Error('watch stopped'));
  }
}
