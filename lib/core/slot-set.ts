/**
 * A set of objects that each keep their own index in it (their "slot"), for the engine's
 * per-cycle bookkeeping: the leases held, the leases a watchdog renews, the acquires in flight.
 * Add and delete are O(1), hash nothing and allocate nothing: a delete moves the last item into
 * the freed slot. A Set (even a SteadySet) gives each new lease an identity hash and rebuilds its
 * table every few adds, as deletes leave holes; those were a tenth of an uncontended cycle's CPU.
 *
 * Each set needs its own slot field on the item (an item may be in several sets at once), read
 * and written through the two functions given. Iteration walks a snapshot taken when it starts,
 * skipping items deleted since: deleting while iterating (a lease lost during a watchdog tick
 * leaves every set) never skips an item still in the set, nor yields one that left it. (Unlike a
 * Set's, it does not yield items added meanwhile.)
 */
export class SlotSet<T> implements Iterable<T> {
  private readonly items: (T | undefined)[] = [];
  private count = 0;

  constructor(
    private readonly slotOf: (item: T) => number,
    private readonly setSlot: (item: T, slot: number) => void,
  ) {}

  get size(): number {
    return this.count;
  }

  has(item: T): boolean {
    const i = this.slotOf(item);
    return i >= 0 && i < this.count && this.items[i] === item;
  }

  add(item: T): void {
    if (this.has(item)) return;
    this.setSlot(item, this.count);
    this.items[this.count++] = item;
  }

  delete(item: T): boolean {
    if (!this.has(item)) return false;
    const i = this.slotOf(item);
    const last = this.items[--this.count] as T;
    this.items[this.count] = undefined;
    if (last !== item) {
      this.items[i] = last;
      this.setSlot(last, i);
    }
    this.setSlot(item, -1);
    return true;
  }

  clear(): void {
    for (let i = 0; i < this.count; i++) {
      this.setSlot(this.items[i] as T, -1);
      this.items[i] = undefined;
    }
    this.count = 0;
  }

  /** How many items pass `test`, read in place (no snapshot: `test` must not change the set). */
  countWhere(test: (item: T) => boolean): number {
    let n = 0;
    for (let i = 0; i < this.count; i++) if (test(this.items[i] as T)) n++;
    return n;
  }

  /** The items now, in a new array. */
  snapshot(): T[] {
    return this.items.slice(0, this.count) as T[];
  }

  *[Symbol.iterator](): Iterator<T> {
    for (const item of this.snapshot()) if (this.has(item)) yield item;
  }
}
