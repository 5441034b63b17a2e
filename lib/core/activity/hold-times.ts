/**
 * How long locks are usually held, per key, in this process: an exponential moving average of
 * recent hold times (weight ALPHA for the newest), kept only for keys a busy answer was estimated
 * for (see `watch`: a key nobody waited for needs no estimate, and a key per request would churn
 * the table on every call), for at most MAX_KEYS keys (least recently used dropped first). It feeds
 * Retry-After (see estimateRetryAfter). Only estimates: no correctness depends on it.
 */
export class HoldTimes {
  static readonly MAX_KEYS = 1_000;
  static readonly ALPHA = 0.3;
  /** Watched keys and their average (undefined until a hold of the key ended). */
  private readonly averages = new Map<string, number | undefined>();

  constructor(private readonly maxKeys = HoldTimes.MAX_KEYS) {}

  /** Keeps `key`'s hold times from now on (a caller found it busy). */
  watch(key: string): void {
    if (this.averages.has(key)) return;
    this.averages.set(key, undefined);
    if (this.averages.size > this.maxKeys) this.evict();
  }

  /** Whether `key`'s holds are recorded (see watch). */
  watches(key: string): boolean {
    return this.averages.has(key);
  }

  /** Records one hold of `key` that lasted `ms`, if the key is watched. */
  record(key: string, ms: number): void {
    if (!this.averages.has(key) || !Number.isFinite(ms) || ms < 0) return;
    const previous = this.averages.get(key);
    this.averages.delete(key); // re-insert: Map order is our LRU order
    this.averages.set(
      key,
      previous === undefined ? ms : previous + HoldTimes.ALPHA * (ms - previous),
    );
  }

  /**
   * Drops the least recently recorded (or watched) keys: the overflow plus an eighth of maxKeys at
   * once, so a stream of new keys makes one iteration per batch instead of one iterator,
   * walking past the deleted slots at the front of the Map, per record().
   */
  private evict(): void {
    let drop = this.averages.size - this.maxKeys + Math.floor(this.maxKeys / 8);
    for (const key of this.averages.keys()) {
      if (drop-- <= 0) break;
      this.averages.delete(key);
    }
  }

  /** The average hold of `key` in ms, or undefined when none was seen recently. */
  average(key: string): number | undefined {
    return this.averages.get(key);
  }

  get size(): number {
    return this.averages.size;
  }
}

/** The process's hold-time statistics (every engine and module of this process feeds it). */
export const holdTimes = new HoldTimes();

/** A per-lock `retryAfter` (ms) attached to a busy error by @Locked, read by the error mapping. */
export const retryAfterHints = new WeakMap<object, number>();

/**
 * Estimated ms until a busy `key` frees: the per-lock hint if any; else the holder's remaining ttl
 * (`remaining`, from the backend's busy answer) or the key's average hold, whichever is LONGER: a
 * client that can see the lock's remaining ttl is never told to come back before it (the holder may
 * release sooner, but nothing here knows that), and holds that usually outlast one ttl (renewed)
 * are not cut to it; else the average alone (a backend that cannot tell), else 1 s.
 */
export function estimateRetryAfter(
  error: object,
  key: string | undefined,
  remaining: number | undefined,
): number {
  const hint = retryAfterHints.get(error);
  if (hint !== undefined) return hint;
  if (key !== undefined) holdTimes.watch(key);
  const average = key === undefined ? undefined : holdTimes.average(key);
  if (remaining !== undefined) return Math.max(remaining, average ?? 0);
  return average ?? 1_000;
}
