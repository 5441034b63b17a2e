import { HoldTimes, estimateRetryAfter, holdTimes, retryAfterHints } from './hold-times';

describe('HoldTimes', () => {
  it('averages recent holds of a watched key, newest weighted most', () => {
    const t = new HoldTimes();
    t.watch('a');
    t.record('a', 1_000);
    expect(t.average('a')).toBe(1_000);
    t.record('a', 0);
    expect(t.average('a')).toBeCloseTo(700);
    expect(t.average('b')).toBeUndefined();
  });

  it('keeps no hold of a key never watched (a key per request churns nothing)', () => {
    const t = new HoldTimes();
    for (let i = 0; i < 100; i++) t.record(`req:${i}`, 5);
    expect(t.size).toBe(0);
    expect(t.watches('req:1')).toBe(false);
  });

  it('keeps at most maxKeys keys, dropping the least recently recorded', () => {
    const t = new HoldTimes(2);
    t.watch('a');
    t.record('a', 1);
    t.watch('b');
    t.record('b', 1);
    t.record('a', 1);
    t.watch('c');
    expect(t.size).toBe(2);
    expect(t.watches('b')).toBe(false);
    expect(t.average('a')).toBe(1);
  });

  it('evicts a stream of new keys in batches (an eighth of maxKeys), least recently recorded first', () => {
    const t = new HoldTimes(16);
    for (let i = 0; i < 17; i++) {
      t.watch(`k${i}`);
      t.record(`k${i}`, i);
    }
    expect(t.size).toBe(14); // the overflow (1) and 16 / 8 more
    expect([0, 1, 2].map((i) => t.average(`k${i}`))).toEqual([undefined, undefined, undefined]);
    expect(t.average('k3')).toBe(3);
    expect(t.average('k16')).toBe(16);
  });

  it('estimates the longer of the remaining ttl and the average, never less than the ttl left; a per-lock hint wins', () => {
    holdTimes.watch('est:1');
    holdTimes.record('est:1', 800);
    expect(estimateRetryAfter({}, 'est:1', 4_500)).toBe(4_500);
    expect(estimateRetryAfter({}, 'est:1', 200)).toBe(800);
    expect(estimateRetryAfter({}, 'est:1', undefined)).toBe(800);
    expect(estimateRetryAfter({}, 'est:none', 5_000)).toBe(5_000);
    expect(estimateRetryAfter({}, 'est:none', undefined)).toBe(1_000);
    const error = {};
    retryAfterHints.set(error, 4_000);
    expect(estimateRetryAfter(error, 'est:1', 200)).toBe(4_000);
  });

  it('watches a key once a busy answer was estimated for it: its later holds feed the next estimate', () => {
    expect(estimateRetryAfter({}, 'est:later', undefined)).toBe(1_000);
    holdTimes.record('est:later', 2_500);
    expect(estimateRetryAfter({}, 'est:later', undefined)).toBe(2_500);
  });
});
