import type { LockEvent } from '../core/activity/lock-events';
import { HISTORY_WINDOW_MS, LiveViewHistory, PER_KEY } from './live-view.history';

/** The timeline's rows share one window: where the busiest row's ring still has all its holds. */
function hold(h: LiveViewHistory, key: string, at: number, ms: number, token: number): void {
  const base = { backend: 'default', key, mode: 'exclusive' as const };
  h.record({
    type: 'acquired',
    at,
    ...base,
    fencingToken: BigInt(token),
    waitMs: 0,
    attempts: 1,
    contended: false,
    reentrant: false,
  } as LockEvent);
  h.record({ type: 'released', at: at + ms, ...base, heldMs: ms } as unknown as LockEvent);
}

describe('LiveViewHistory window', () => {
  it('starts every row where the busiest ring still has all its holds', () => {
    const h = new LiveViewHistory();
    const now = 1_000_000_000;
    // A quiet key held 4 minutes ago, and a busy key with twice its ring's worth of holds since.
    hold(h, 'quiet', now - 240_000, 100, 1);
    for (let i = 0; i < PER_KEY * 2; i++) hold(h, 'busy', now - 60_000 + i * 100, 50, i + 2);
    const s = h.snapshot(now);
    const oldestBusy = now - 60_000 + PER_KEY * 100;
    expect(s.windowMs).toBe(now - oldestBusy);
    expect(s.windowMs).toBeLessThan(HISTORY_WINDOW_MS);
    const busy = s.timeline.find((k) => k.key === 'busy');
    expect(busy?.bars).toHaveLength(PER_KEY);
    // The quiet key's hold is older than the window: not drawn where the busy row has no data.
    expect(s.timeline.find((k) => k.key === 'quiet')).toBeUndefined();
  });

  it('is the full 5 minutes while no ring is full', () => {
    const h = new LiveViewHistory();
    const now = 1_000_000_000;
    hold(h, 'quiet', now - 240_000, 100, 1);
    const s = h.snapshot(now);
    expect(s.windowMs).toBe(HISTORY_WINDOW_MS);
    expect(s.timeline.map((k) => k.key)).toEqual(['quiet']);
  });
});
