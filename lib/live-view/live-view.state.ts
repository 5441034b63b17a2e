import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Observable } from 'rxjs';
import { LockEngine } from '../core/lock-engine';
import type { LockEvent } from '../core/lock-events';

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
}

/** How many recent events the page keeps, and the least interval between two pushes (ms). */
export const LIVE_VIEW_RECENT = 50;
const PUSH_INTERVAL_MS = 100;

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
  private readonly stop: () => void;

  constructor(@Inject(LockEngine) private readonly engine: LockEngine) {
    this.stop = engine.events.on((e) => this.record(e));
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
    };
  }

  /** Snapshots for one page: the current one at once, then after every change. */
  updates(): Observable<LiveViewSnapshot> {
    return new Observable((subscriber) => {
      const push = (s: LiveViewSnapshot) => subscriber.next(s);
      this.pages.add(push);
      push(this.snapshot());
      return () => this.pages.delete(push);
    });
  }

  onModuleDestroy(): void {
    this.stop();
    clearTimeout(this.timer);
    this.pages.clear();
  }

  private record(e: LockEvent): void {
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

function toJson(e: LockEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (typeof v === 'bigint') out[k] = String(v);
    else if (v instanceof Error) out[k] = v.message;
    else if (typeof v === 'number' && k !== 'at') out[k] = Math.round(v);
    else out[k] = v;
  }
  return out;
}
