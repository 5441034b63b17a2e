import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Observable } from 'rxjs';
import { LockEngine } from '../core/lock-engine';
import type { LockEvent } from '../core/activity/lock-events';
import { fencingEvents, type StaleFencingEvent } from '../fencing/fencing-events';
import { LiveViewHistory, type LiveViewHistorySnapshot } from './live-view.history';

/** What the page shows; JSON-safe (tokens as strings, errors as messages). */
export interface LiveViewSnapshot {
  readonly now: number;
  readonly held: {
    key: string;
    backend: string;
    mode: string;
    fencingToken: string;
    since: number;
    holds: number;
  }[];
  readonly waiting: { key: string; backend: string; waiters: number }[];
  readonly recent: Record<string, unknown>[];
  /**
   * Held on each backend by every process, from the backend's list() (refreshed every
   * LIVE_VIEW_LIST_INTERVAL ms while a page is open): keys, or why there are none to show.
   */
  readonly backends: BackendListing[];
  /**
   * The last minutes per key (holds, waits, losses), the hottest keys by wait, the wait histogram.
   */
  readonly history: LiveViewHistorySnapshot;
}

export interface BackendListing {
  readonly backend: string;
  /** Held keys (without the key prefix), at most LIVE_VIEW_LIST_LIMIT. */
  readonly keys: string[];
  /** true when the backend had more than LIVE_VIEW_LIST_LIMIT held keys. */
  readonly more: boolean;
  /** Set when the backend cannot list (unsupported) or the last listing failed. */
  readonly note?: string;
}

/** How many recent events the page keeps, and the least interval between two pushes (ms). */
export const LIVE_VIEW_RECENT = 50;
const PUSH_INTERVAL_MS = 100;
/**
 * How often an open page refreshes the backend-wide listing (one list() per backend), and its size.
 */
export const LIVE_VIEW_LIST_INTERVAL = 2_000;
export const LIVE_VIEW_LIST_LIMIT = 100;

/**
 * Keeps the last events of the engine and pushes snapshots (held locks, waiters, recent events)
 * to every open page, at most every 100 ms however busy the locks are: the view costs one
 * snapshot per interval, never one per lock operation.
 */
@Injectable()
export class LiveViewState implements OnModuleDestroy {
  private readonly recent: Record<string, unknown>[] = [];
  private readonly pages = new Set<(s: LiveViewSnapshot) => void>();
  private timer: NodeJS.Timeout | undefined;
  private listing: BackendListing[] = [];
  private lister: NodeJS.Timeout | undefined;
  private readonly stops: (() => void)[];
  private readonly history = new LiveViewHistory();

  constructor(@Inject(LockEngine) private readonly engine: LockEngine) {
    // Lock events, and this process's refused fenced writes (type 'fencing.stale').
    this.stops = [engine.events.on((e) => this.record(e)), fencingEvents.on((e) => this.record(e))];
  }

  snapshot(): LiveViewSnapshot {
    const now = Date.now();
    return {
      now,
      held: this.engine.operator.heldLocks().map((l) => ({
        key: l.key,
        backend: l.backend,
        mode: l.mode,
        fencingToken: String(l.fencingToken),
        since: now - l.heldMs,
        holds: l.holds,
      })),
      waiting: this.engine.operator.waitingLocks(),
      recent: [...this.recent],
      backends: this.listing,
      history: this.history.snapshot(now),
    };
  }

  /**
   * Lists what every process holds, on each backend that can list (one bounded list() call per
   * backend); a backend that cannot, or fails, gets a note instead of keys. Never throws.
   */
  async refreshListing(): Promise<BackendListing[]> {
    const operator = this.engine.operator;
    this.listing = await Promise.all(
      this.engine.backendNames.map(async (backend): Promise<BackendListing> => {
        if (typeof this.engine.backend(backend).list !== 'function')
          return { backend, keys: [], more: false, note: 'this backend cannot list its keys' };
        try {
          const keys = await operator.list('', backend, LIVE_VIEW_LIST_LIMIT + 1);
          return {
            backend,
            keys: keys.slice(0, LIVE_VIEW_LIST_LIMIT),
            more: keys.length > LIVE_VIEW_LIST_LIMIT,
          };
        } catch (error) {
          // The code only: a backend's error text can name addresses and users (the log has it).
          return { backend, keys: [], more: false, note: `listing failed (${errorCode(error)})` };
        }
      }),
    );
    return this.listing;
  }

  /** Snapshots for one page: the current one at once, then after every change. */
  updates(): Observable<LiveViewSnapshot> {
    return new Observable((subscriber) => {
      const push = (s: LiveViewSnapshot) => subscriber.next(s);
      this.pages.add(push);
      push(this.snapshot());
      this.startListing();
      return () => {
        this.pages.delete(push);
        if (this.pages.size === 0) this.stopListing();
      };
    });
  }

  /**
   * While a page is open: list the backends now and every LIVE_VIEW_LIST_INTERVAL ms, pushing each
   * result.
   */
  private startListing(): void {
    if (this.lister) return;
    const tick = () => {
      void this.refreshListing().then(() => {
        if (this.pages.size === 0) return;
        const s = this.snapshot();
        for (const push of this.pages) push(s);
        if (this.lister) this.lister = setTimeout(tick, LIVE_VIEW_LIST_INTERVAL).unref();
      });
    };
    this.lister = setTimeout(tick, 0).unref();
  }

  private stopListing(): void {
    clearTimeout(this.lister);
    this.lister = undefined;
  }

  onModuleDestroy(): void {
    for (const stop of this.stops) stop();
    clearTimeout(this.timer);
    this.stopListing();
    this.pages.clear();
  }

  private record(e: LockEvent | StaleFencingEvent): void {
    if (e.type !== 'fencing.stale') this.history.record(e);
    this.recent.unshift(toJson(e));
    if (this.recent.length > LIVE_VIEW_RECENT) this.recent.length = LIVE_VIEW_RECENT;
    if (this.pages.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const s = this.snapshot();
      for (const push of this.pages) push(s);
    }, PUSH_INTERVAL_MS);
    this.timer.unref();
  }
}

function toJson(e: LockEvent | StaleFencingEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (typeof v === 'bigint') out[k] = String(v);
    else if (v instanceof Error || k === 'error') out[k] = errorCode(v);
    else if (typeof v === 'number' && k !== 'at') out[k] = Math.round(v);
    else out[k] = v;
  }
  return out;
}

/** What the page shows of an error: its code or name, never its text (addresses, user names). */
function errorCode(error: unknown): string {
  const e = error as { code?: unknown; name?: unknown } | null;
  if (e && typeof e.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(e.code)) return e.code;
  if (e && typeof e.name === 'string' && /^\w{1,64}$/.test(e.name)) return e.name;
  return 'error';
}
