import type { LockEvent } from '../core/activity/lock-events';

/** How far back the timeline and the wait statistics look (ms), and how much they keep. */
export const HISTORY_WINDOW_MS = 5 * 60_000;
/**
 * Keys the history tracks (the least recently active is dropped first), and holds and marks kept
 * per key: a busy key keeps its last 200 holds. Memory is bounded by 500 x (200 + 200) entries of
 * about 100 bytes (20 MB at most, a few KB per quiet key).
 */
export const HISTORY_KEYS = 500;
export const PER_KEY = 200;
/** Keys on the timeline (the most recently active) and in the hottest-keys table. */
export const TIMELINE_KEYS = 25;
export const HOT_KEYS = 10;
/** Waits kept for the histogram and the hottest keys. */
const WAITS = 5_000;
/** Upper bounds (ms) of the wait-time histogram's buckets; the last bucket is everything above. */
export const WAIT_BUCKETS_MS = [1, 5, 10, 50, 100, 500, 1_000, 5_000] as const;

/** A hold on the timeline: from its grant to its release or loss (open while held). */
export interface HoldBar {
  readonly from: number;
  to?: number;
  readonly token: string;
  readonly mode: string;
  end?: 'released' | 'lost';
}

/** A point on the timeline: a grant after waiting, a busy answer, a loss, a failed acquire. */
export interface TimelineMark {
  readonly at: number;
  readonly kind: 'waited' | 'busy' | 'lost' | 'failed';
  readonly ms?: number;
}

export interface KeyTimeline {
  readonly key: string;
  readonly backend: string;
  readonly bars: HoldBar[];
  readonly marks: TimelineMark[];
}

export interface LiveViewHistorySnapshot {
  readonly windowMs: number;
  readonly timeline: KeyTimeline[];
  /** The keys waited on most (total ms), each with its number of waits and its longest (ms). */
  readonly hot: { key: string; backend: string; waitMs: number; waits: number; maxMs: number }[];
  /** Waits (every grant's, and busy answers) per bucket: `le` ms or less; null = above. */
  readonly histogram: { le: number | null; count: number }[];
}

interface Wait {
  readonly at: number;
  readonly id: string;
  readonly ms: number;
  /** Waited for another holder (a contended grant, a busy answer): counts for the hottest keys. */
  readonly contended: boolean;
}

/**
 * The live view's recent history, from lock events only (no backend call): per key, its holds as
 * bars with their fencing tokens, and its waits, busy answers and losses as marks; plus the waits
 * behind the hottest keys and the wait-time histogram. Bounded in keys, bars and waits whatever
 * the traffic; a snapshot costs O(tracked keys).
 */
export class LiveViewHistory {
  private readonly keys = new Map<string, KeyTimeline>();
  private readonly waits: Wait[] = [];

  record(e: LockEvent): void {
    if (!('key' in e) || typeof e.key !== 'string') return;
    const line = this.line(e.backend, e.key);
    if (e.type === 'acquired') {
      if (e.reentrant) return;
      push(line.bars, { from: e.at, token: String(e.fencingToken), mode: e.mode });
      // A contended grant waited for another holder: a mark, and a wait of the key's. Every grant's
      // wait goes into the histogram.
      if (e.contended) push(line.marks, { at: e.at, kind: 'waited', ms: Math.round(e.waitMs) });
      this.wait(e.at, line, e.waitMs, e.contended);
    } else if (e.type === 'busy') {
      push(line.marks, { at: e.at, kind: 'busy', ms: Math.round(e.waitMs) });
      this.wait(e.at, line, e.waitMs, true);
    } else if (e.type === 'released' || e.type === 'lost') {
      const bar = line.bars.find((b) => b.to === undefined);
      if (bar) {
        bar.to = e.at;
        bar.end = e.type;
      }
      if (e.type === 'lost') push(line.marks, { at: e.at, kind: 'lost' });
    } else if (e.type === 'acquireFailed') {
      push(line.marks, { at: e.at, kind: 'failed', ms: Math.round(e.waitMs) });
    }
  }

  snapshot(now: number, match: (key: string) => boolean = () => true): LiveViewHistorySnapshot {
    const { hot, histogram } = this.waitStats(now - HISTORY_WINDOW_MS, match);
    const lines = this.shown(hot, match);
    // One window for every row: it starts where every shown row still has all its entries (a busy
    // key's ring that dropped older holds would otherwise start later than a quiet key's row).
    let since = now - HISTORY_WINDOW_MS;
    for (const line of lines) {
      if (line.bars.length >= PER_KEY) since = Math.max(since, line.bars[0].from);
      if (line.marks.length >= PER_KEY) since = Math.max(since, line.marks[0].at);
    }
    const timeline: KeyTimeline[] = [];
    for (const line of lines) {
      const bars = line.bars.filter((b) => b.to === undefined || b.to >= since);
      const marks = line.marks.filter((m) => m.at >= since);
      if (bars.length || marks.length) timeline.push({ ...line, bars, marks });
    }
    return {
      windowMs: now - since,
      timeline,
      hot: hot.map(({ id: _id, ...h }) => h),
      histogram,
    };
  }

  /** The timeline's keys: the hottest first (where waiting happens), then the most recent. */
  private shown(hot: { id: string }[], match: (key: string) => boolean): KeyTimeline[] {
    const ids = [...hot.map((h) => h.id), ...[...this.keys.keys()].reverse()];
    const lines: KeyTimeline[] = [];
    const taken = new Set<string>();
    for (const id of ids) {
      const line = this.keys.get(id);
      if (lines.length >= TIMELINE_KEYS) break;
      if (!line || taken.has(id) || !match(line.key)) continue;
      taken.add(id);
      lines.push(line);
    }
    return lines;
  }

  private waitStats(since: number, match: (key: string) => boolean) {
    const per = new Map<string, { waitMs: number; waits: number; maxMs: number }>();
    const histogram = [...WAIT_BUCKETS_MS, null].map((le) => ({ le, count: 0 }));
    for (const w of this.waits) {
      if (w.at < since || !match(w.id.slice(w.id.indexOf('\u0000') + 1))) continue;
      const i = WAIT_BUCKETS_MS.findIndex((le) => w.ms <= le);
      histogram[i < 0 ? histogram.length - 1 : i].count++;
      if (!w.contended) continue;
      const p = per.get(w.id) ?? { waitMs: 0, waits: 0, maxMs: 0 };
      p.waitMs += w.ms;
      p.waits++;
      p.maxMs = Math.max(p.maxMs, w.ms);
      per.set(w.id, p);
    }
    const hot = [...per]
      .sort((a, b) => b[1].waitMs - a[1].waitMs)
      .slice(0, HOT_KEYS)
      .map(([id, p]) => {
        const line = this.keys.get(id);
        const key = line?.key ?? id;
        return {
          id,
          key,
          backend: line?.backend ?? '',
          waits: p.waits,
          waitMs: Math.round(p.waitMs),
          maxMs: Math.round(p.maxMs),
        };
      });
    return { hot, histogram };
  }

  /**
   * The key's timeline, made the most recently active (Map order), the oldest dropped past
   * HISTORY_KEYS.
   */
  private line(backend: string, key: string): KeyTimeline {
    const id = `${backend}\u0000${key}`;
    let line = this.keys.get(id);
    if (line) this.keys.delete(id);
    else line = { key, backend, bars: [], marks: [] };
    this.keys.set(id, line);
    if (this.keys.size > HISTORY_KEYS) this.keys.delete(this.keys.keys().next().value as string);
    return line;
  }

  private wait(at: number, line: KeyTimeline, ms: number, contended: boolean): void {
    this.waits.push({ at, id: `${line.backend}\u0000${line.key}`, ms, contended });
    if (this.waits.length > WAITS) this.waits.splice(0, this.waits.length - WAITS);
  }
}

function push<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > PER_KEY) list.splice(0, list.length - PER_KEY);
}
