import { SteadyMap, SteadySet } from './steady-collections';

describe('SteadySet', () => {
  it('behaves as a Set whose hidden sentinel never shows (size, has, iteration, clear)', () => {
    const s = new SteadySet<object>();
    const a = {};
    const b = {};
    expect(s.size).toBe(0);
    expect([...s]).toEqual([]);
    s.add(a).add(b).add(a);
    expect(s.size).toBe(2);
    expect([...s]).toEqual([a, b]);
    expect(s.delete(a)).toBe(true);
    expect(s.delete(a)).toBe(false);
    expect(s.has(a)).toBe(false);
    expect(s.has(b)).toBe(true);
    s.clear();
    expect(s.size).toBe(0);
    expect([...s]).toEqual([]);
    s.add(a);
    expect([...s]).toEqual([a]);
  });

  it('tolerates deletes while iterating, as Set does', () => {
    const s = new SteadySet<number>();
    for (let i = 0; i < 5; i++) s.add(i);
    const seen: number[] = [];
    for (const v of s) {
      seen.push(v);
      s.delete(v + 1);
    }
    expect(seen).toEqual([0, 2, 4]);
  });
});

describe('SteadyMap', () => {
  it('behaves as a Map whose hidden sentinel never shows (get, size, keys, values, entries, clear)', () => {
    const m = new SteadyMap<string, number>();
    expect(m.size).toBe(0);
    expect(m.get('')).toBeUndefined();
    m.set('a', 1).set('', 0).set('a', 2);
    expect(m.size).toBe(2);
    expect(m.get('a')).toBe(2);
    expect(m.get('')).toBe(0);
    expect([...m.keys()]).toEqual(['a', '']);
    expect([...m.values()]).toEqual([2, 0]);
    expect([...m]).toEqual([
      ['a', 2],
      ['', 0],
    ]);
    expect(m.delete('a')).toBe(true);
    expect(m.has('a')).toBe(false);
    m.clear();
    expect(m.size).toBe(0);
    expect([...m]).toEqual([]);
  });
});
