import type { FencedRefused } from './fencing-token';

/** One refused write or call: a holder presented a token older than the resource's highest. */
export interface StaleFencingEvent {
  readonly type: 'fencing.stale';
  readonly at: number;
  /** Which form refused it: 'redis', 'postgres', 'mysql', 'memory' or 'guard'. */
  readonly store: string;
  readonly resource: string;
  readonly token: bigint;
  readonly highest: bigint;
}

export type StaleFencingListener = (event: StaleFencingEvent) => void;

/**
 * Where fenced stores report refusals. Every store reports to `fencingEvents` (this process's
 * default) unless given its own `events`; DistributedLockModule counts them in metrics
 * (`lock.fencing.stale`) and the live view lists them with the lock events. A listener that throws
 * is ignored: a report never fails the write that was being refused.
 */
export class FencingEvents {
  private readonly listeners = new Set<StaleFencingListener>();

  /** Subscribes; returns the unsubscribe function. */
  on(listener: StaleFencingListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Reports one refusal (the stores call this; so may your own fenced resource). */
  stale(store: string, refusal: Pick<FencedRefused, 'resource' | 'token' | 'highest'>): void {
    if (this.listeners.size === 0) return;
    const event: StaleFencingEvent = {
      type: 'fencing.stale',
      at: Date.now(),
      store,
      resource: refusal.resource,
      token: refusal.token,
      highest: refusal.highest,
    };
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // An observer's bug must not turn a refused write into a different error.
      }
    }
  }
}

/** The process-wide default every fenced store reports to. */
export const fencingEvents = new FencingEvents();

/** Options every fence store accepts. */
export interface FenceObserverOptions {
  /** Where refusals are reported (default: the process-wide `fencingEvents`). */
  events?: FencingEvents;
  /** Called for every refusal of this store, after `events`. */
  onStale?: StaleFencingListener;
}

/** The reporter a store calls on every refusal: its events, then its own onStale. */
export function staleReporter(
  store: string,
  options: FenceObserverOptions = {},
): (refusal: FencedRefused) => void {
  const events = options.events ?? fencingEvents;
  const own = options.onStale;
  return (refusal) => {
    events.stale(store, refusal);
    if (!own) return;
    try {
      own({ type: 'fencing.stale', at: Date.now(), store, ...pick(refusal) });
    } catch {
      // Same rule as FencingEvents: the caller gets the refusal, not the observer's error.
    }
  };
}

function pick(r: FencedRefused) {
  return { resource: r.resource, token: r.token, highest: r.highest };
}
