/**
 * What the Redis lock and semaphore remember of the server's recent answers, so their uncontended
 * paths (one short script or command, see redis.grants.ts) are not tried where they would only
 * cost a second round trip: keys found busy by a first attempt, and keys whose release found
 * someone queued.
 */
/** How long a key counts as busy (attempt) or contended (release) after it was found so. */
const CONTENDED_MS = 1_000;
/** At most this many keys are remembered per kind (the map is cleared when full). */
const CONTENDED_KEYS = 256;

/**
 * Keys marked lately (found busy, or contended): key -> when (performance.now()). Not the
 * `recentKeys` cache of derived key names: this remembers what the server answered.
 */
export class RecentMarks {
  private readonly at = new Map<string, number>();

  has(key: string): boolean {
    const at = this.at.get(key);
    return at !== undefined && performance.now() - at < CONTENDED_MS;
  }

  mark(key: string): void {
    if (this.at.size >= CONTENDED_KEYS) this.at.clear();
    this.at.set(key, performance.now());
  }
}
