import { Inject, Injectable, Optional, type OnModuleDestroy } from '@nestjs/common';
import { Observable } from 'rxjs';
import { LockEngine } from '../core/lock-engine';
import type { LockEvent } from '../core/activity/lock-events';
import type { FencingEvents, StaleFencingEvent } from '../fencing/fencing-events';
import { LiveViewHistory, type LiveViewHistorySnapshot } from './live-view.history';
import { cut, redactResource, textOf } from './live-view.text';
import type { LockInspection } from '../interfaces/lock-backend.interface';

/** Holders of one listed key the page shows (a shared lock may have many). */
const LIVE_VIEW_MAX_HOLDERS = 20;

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
  /** This process, as the held rows' holder: host name, pid and the module's `instance`. */
  readonly self: { readonly host: string; readonly pid: number; readonly instance: string };
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
  /** The first LIVE_VIEW_INSPECT_LIMIT keys with their holders, from the backend's inspect(). */
  readonly locks?: ListedLock[];
  /** When the listing was read (ms since the epoch): the holders' ttl counts from it. */
  readonly at?: number;
  /** true when the backend had more than LIVE_VIEW_LIST_LIMIT held keys. */
  readonly more: boolean;
  /** Set when the backend cannot list (unsupported) or the last listing failed. */
  readonly note?: string;
}

/** A held key of the listing and who holds it, by what each grant stored on the backend. */
export interface ListedLock {
  readonly key: string;
  readonly mode?: string;
  readonly fencingToken?: string;
  readonly holders: ListedHolder[];
}

export interface ListedHolder {
  readonly mode: string;
  readonly host?: string;
  readonly pid?: number;
  readonly instance?: string;
  /** What another client stored instead (Curator: an IP address; kazoo: an identifier). */
  readonly data?: string;
  /** ms left of the grant when listed, where the backend has per-grant ttls. */
  readonly ttlMs?: number;
  /** The start of the owner token (enough to tell holders apart), where the backend stores it. */
  readonly owner?: string;
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
/** Listed keys whose holders are read too (one inspect() each, concurrently, per refresh). */
export const LIVE_VIEW_INSPECT_LIMIT = 50;

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
  private readonly self: LiveViewSnapshot['self'];

  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Optional() @Inject(LIVE_VIEW_FENCING_EVENTS) fencing?: FencingEvents | null,
  ) {
    // Lock events, and the refused fenced writes of this app's stores (type 'fencing.stale').
    const { host, pid, instance } = engine.holder;
    this.self = { host: cut(host), pid, instance: cut(instance) };
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
      self: this.self,
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
          const at = Date.now();
          const keys = await operator.list('', backend, LIVE_VIEW_LIST_LIMIT + 1);
          return {
            backend,
            keys: keys.slice(0, LIVE_VIEW_LIST_LIMIT).map(cut),
            more: keys.length > LIVE_VIEW_LIST_LIMIT,
            locks: await this.holdersOf(backend, keys.slice(0, LIVE_VIEW_INSPECT_LIMIT)),
            at,
          };
        } catch (error) {
          // The code only: a backend's error text can name addresses and users (the log has it).
          return { backend, keys: [], more: false, note: `listing failed (${errorCode(error)})` };
        }
      }),
    );
    return this.listing;
  }

  /**
   * Who holds each of `keys` (inspect() of each, concurrently), as JSON-safe rows; a key that is no
   * longer held, or whose inspect failed, is left out. None when the backend cannot inspect.
   */
  private async holdersOf(backend: string, keys: string[]): Promise<ListedLock[] | undefined> {
    if (typeof this.engine.backend(backend).inspect !== 'function') return undefined;
    const read = await Promise.all(
      keys.map((key) => this.engine.operator.inspect(key, backend).catch(() => undefined)),
    );
    return read.flatMap((r, i) => (r?.held ? [{ key: cut(keys[i]), ...listedLock(r) }] : []));
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

/** An inspect() report as the page gets it: holders' identities, ttl and token; strings cut. */
function listedLock(r: LockInspection): Omit<ListedLock, 'key'> {
  return {
    mode: r.mode,
    fencingToken: r.fencingToken === undefined ? undefined : String(r.fencingToken),
    holders: r.holders.slice(0, LIVE_VIEW_MAX_HOLDERS).map((h) => {
      const m = h.metadata ?? {};
      return {
        mode: h.mode,
        host: m.host === undefined ? undefined : cut(m.host),
        pid: m.pid === undefined ? undefined : Number(m.pid),
        instance: m.instance === undefined ? undefined : cut(m.instance),
        data: m.data === undefined ? undefined : cut(m.data),
        ttlMs: h.remainingTtl === undefined ? undefined : Math.round(h.remainingTtl),
        owner: h.owner?.slice(0, 8),
      };
    }),
  };
}
