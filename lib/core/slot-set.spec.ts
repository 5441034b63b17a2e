import { SlotSet } from './slot-set';

interface Item {
  name: string;
  a: number;
  b: number;
}
const item = (name: string): Item => ({ name, a: -1, b: -1 });
const inA = () =>
  new SlotSet<Item>(
    (x) => x.a,
    (x, i) => (x.a = i),
  );
const inB = () =>
  new SlotSet<Item>(
    (x) => x.b,
    (x, i) => (x.b = i),
  );

describe('SlotSet', () => {
  it('behaves as a Set: add (idempotent), has, delete (once), size, iteration, clear', () => {
    const s = inA();
    const [x, y, z] = ['x', 'y', 'z'].map(item);
    s.add(x);
    s.add(y);
    s.add(x);
    s.add(z);
    expect(s.size).toBe(3);
    expect([...s].map((i) => i.name)).toEqual(['x', 'y', 'z']);
    expect(s.countWhere((i) => i.name !== 'y')).toBe(2);
    expect(s.delete(x)).toBe(true);
    expect(s.delete(x)).toBe(false);
    expect(s.has(x)).toBe(false);
    expect(x.a).toBe(-1);
    // The last item moved into the freed slot, and knows it.
    expect([...s].map((i) => i.name)).toEqual(['z', 'y']);
    expect(z.a).toBe(0);
    expect(s.has(y) && s.has(z)).toBe(true);
    s.clear();
    expect(s.size).toBe(0);
    expect([y.a, z.a]).toEqual([-1, -1]);
    expect([...s]).toEqual([]);
  });

  it('keeps an item in two sets apart (one slot field each)', () => {
    const a = inA();
    const b = inB();
    const [x, y] = ['x', 'y'].map(item);
    a.add(x);
    b.add(y);
    b.add(x);
    expect(a.has(y)).toBe(false);
    expect(b.has(x) && b.has(y) && a.has(x)).toBe(true);
    a.delete(x);
    expect(b.has(x)).toBe(true);
    expect([...b].map((i) => i.name)).toEqual(['y', 'x']);
  });

  it('does not take an item of another set (same slot number) for its own', () => {
    const s1 = inA();
    const s2 = inA();
    const [x, y] = ['x', 'y'].map(item);
    s1.add(x);
    expect(s2.has(x)).toBe(false);
    expect(s2.delete(x)).toBe(false);
    s2.add(y);
    expect(s1.has(y)).toBe(false);
    expect(s1.has(x)).toBe(true);
  });

  it('iterates a snapshot: deletes while iterating skip no item still in it, and yield none gone', () => {
    const s = inA();
    const items = ['p', 'q', 'r', 's', 't'].map(item);
    for (const i of items) s.add(i);
    const seen: string[] = [];
    for (const i of s) {
      seen.push(i.name);
      s.delete(i);
      if (i.name === 'q') s.delete(items[4]);
    }
    // t left while q was visited; every other item was visited once, though each delete moved
    // the last item into the freed slot.
    expect(seen).toEqual(['p', 'q', 'r', 's']);
    expect(s.size).toBe(0);
  });
});
