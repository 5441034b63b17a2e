import { Inject, Injectable, Optional, type OnModuleDestroy } from '@nestjs/common';
import { hostname } from 'node:os';
import { Observable } from 'rxjs';
import { LockEngine } from '../core/lock-engine';
import type { LockEvent } from '../core/activity/lock-events';
import type { FencingEvents, StaleFencingEvent } from '../fencing/fencing-events';
import { LiveViewHistory, type LiveViewHistorySnapshot } from './live-view.history';
import { cut, redactResource, textOf } from './live-view.text';

const SELF = { host: cut(hostname()), pid: process.pid };

/** The FencingEvents whose refusals the page lists (null: none), from register()'s option. */
export const LIVE_VIEW_FENCING_EVENTS = Symbol('LIVE_VIEW_FENCING_EVENTS');

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
  /** Held locks in all (`held` shows at most LIVE_VIEW_MAX_ROWS of them). */
  readonly heldTotal: number;
  readonly waiting: { key: string; backend: string; waiters: number; oldestMs?: number }[];
  readonly waitingTotal: number;
  /** This process, as the held rows' holder: host name and pid. */
  readonly self: { readonly host: string; readonly pid: number };
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

/**
 * Rows of held locks and of waiters a push carries (the page shows this many): with the strings cut
 * to LIVE_VIEW_MAX_TEXT characters, a push stays under about 200 KB whatever the process holds.
 */
export const LIVE_VIEW_MAX_ROWS = 200;

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
  /** Open pages: each is pushed the snapshot of its own filter. */
  private readonly pages = new Set<{ filter: string; push: (s: LiveViewSnapshot) => void }>();
  private timer: NodeJS.Timeout | undefined;
  private listing: BackendListing[] = [];
  private lister: NodeJS.Timeout | undefined;
  private readonly stops: (() => void)[];
  private readonly history = new LiveViewHistory();

  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Optional() @Inject(LIVE_VIEW_FENCING_EVENTS) fencing?: FencingEvents | null,
  ) {
    // Lock events, and the refused fenced writes of this app's stores (type 'fencing.stale').
    this.stops = [engine.events.on((e) => this.record(e))];
    if (fencing) this.stops.push(fencing.on((e) => this.record(e)));
  }

  /**
   * What the page shows; `filter` (a substring of the key, as the page's filter box or a click on a
   * key sets it) narrows every panel before the rows are capped, so any key can be reached.
   */
  snapshot(filter = ''): LiveViewSnapshot {
    const now = Date.now();
    const match = (key: string) => !filter || key.includes(filter);
    const held = this.engine.operator.heldLocks().filter((l) => match(l.key));
    const waiting = this.engine.operator.waitingLocks().filter((w) => match(w.key));
    const history = this.history.snapshot(now, match);
    return {
      now,
      held: held.slice(0, LIVE_VIEW_MAX_ROWS).map((l) => ({
        key: cut(l.key),
        backend: cut(l.backend),
        mode: l.mode,
        fencingToken: String(l.fencingToken),
        since: now - l.heldMs,
        holds: l.holds,
      })),
      heldTotal: held.length,
      waiting: waiting.slice(0, LIVE_VIEW_MAX_ROWS).map((w) => ({
        key: cut(w.key),
        backend: cut(w.backend),
        waiters: w.waiters,
        oldestMs: w.oldestMs,
      })),
      waitingTotal: waiting.length,
      recent: filter
        ? this.recent.filter((e) => match(String(e.key ?? e.resource ?? '')))
        : [...this.recent],
      self: SELF,
      backends: this.listing,
      history: {
        ...history,
        timeline: history.timeline.map((k) => ({ ...k, key: cut(k.key), backend: cut(k.backend) })),
        hot: history.hot.map((h) => ({ ...h, key: cut(h.key), backend: cut(h.backend) })),
      },
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
            keys: keys.slice(0, LIVE_VIEW_LIST_LIMIT).map(cut),
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
  updates(filter = ''): Observable<LiveViewSnapshot> {
    return new Observable((subscriber) => {
      const page = { filter, push: (s: LiveViewSnapshot) => subscriber.next(s) };
      this.pages.add(page);
      page.push(this.snapshot(filter));
      this.startListing();
      return () => {
        this.pages.delete(page);
        if (this.pages.size === 0) this.stopListing();
      };
    });
  }

  /** One snapshot per distinct filter of the open pages, pushed to each. */
  private broadcast(): void {
    const made = new Map<string, LiveViewSnapshot>();
    for (const page of this.pages) {
      let s = made.get(page.filter);
      if (!s) made.set(page.filter, (s = this.snapshot(page.filter)));
      page.push(s);
    }
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
        this.broadcast();
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
      this.broadcast();
    }, PUSH_INTERVAL_MS);
    this.timer.unref();
  }
}

/**
 * An event as the page gets it: tokens as strings, errors as codes, strings cut to
 * LIVE_VIEW_MAX_TEXT, a refused write's resource without the values of its `where`.
 */
function toJson(e: LockEvent | StaleFencingEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (typeof v === 'bigint') out[k] = String(v);
    else if (v instanceof Error || k === 'error') out[k] = errorCode(v);
    else if (typeof v === 'number' && k !== 'at') out[k] = Math.round(v);
    else if (k === 'resource' && typeof v === 'string') out[k] = cut(redactResource(v));
    else if (typeof v === 'string') out[k] = cut(v);
    else out[k] = textOf(v);
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
