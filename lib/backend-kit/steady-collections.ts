/**
 * Set and Map for bookkeeping that empties on every lock cycle (one entry added at acquire,
 * deleted at release). V8 shrinks a hash table through a runtime call, allocating a new one,
 * whenever a delete leaves it sparse, which a delete that empties it always does; these keep one
 * hidden sentinel entry so they never empty. The sentinel is invisible through every method.
 * Kept because a block A/B of the memory cycle measures it (docs/development.md).
 */
const SENTINEL: unique symbol = Symbol('steady-collection sentinel');

export class SteadySet<T> implements Iterable<T> {
  private readonly items = new Set<T | typeof SENTINEL>([SENTINEL]);

  add(value: T): this {
    this.items.add(value);
    return this;
  }

  delete(value: T): boolean {
    return this.items.delete(value);
  }

  has(value: T): boolean {
    return this.items.has(value);
  }

  get size(): number {
    return this.items.size - 1;
  }

  clear(): void {
    this.items.clear();
    this.items.add(SENTINEL);
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (const value of this.items) if (value !== SENTINEL) yield value;
  }
}

export class SteadyMap<K, V> implements Iterable<[K, V]> {
  private readonly items = new Map<K | typeof SENTINEL, V>([[SENTINEL, undefined as V]]);

  get(key: K): V | undefined {
    return this.items.get(key);
  }

  set(key: K, value: V): this {
    this.items.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    return this.items.delete(key);
  }

  has(key: K): boolean {
    return this.items.has(key);
  }

  get size(): number {
    return this.items.size - 1;
  }

  clear(): void {
    this.items.clear();
    this.items.set(SENTINEL, undefined as V);
  }

  *keys(): IterableIterator<K> {
    for (const key of this.items.keys()) if (key !== SENTINEL) yield key;
  }

  *values(): IterableIterator<V> {
    for (const [key, value] of this.items) if (key !== SENTINEL) yield value;
  }

  *[Symbol.iterator](): IterableIterator<[K, V]> {
    for (const [key, value] of this.items) if (key !== SENTINEL) yield [key as K, value];
  }
}
