import { createHash } from 'node:crypto';

/**
 * The Redis keys of one lock, all in the slot of one hash tag so every script touches one slot and
 * runs unchanged on Redis Cluster:
 *   {K}     exclusive holder: owner token, PX ttl
 *   {K}:r   shared holders: sorted set owner -> expiry (server ms), PEXPIREAT the latest expiry
 *   {K}:f   fence: last token issued (see fenceRetention)
 *   {K}:q   waiters in arrival order: sorted set owner -> arrival (server µs)   (Redis backend)
 *   {K}:w   the waiters' grant details: hash owner -> "deadline|mode|ttl|channel" (Redis backend)
 *   {K}:h   the exclusive holder's identity: "owner|holder data" (host, pid, instance), written
 *           with each exclusive grant, kept fenceRetention ms (a stale one names an old owner)
 *   {K}:hr  the shared holders' identities: hash owner -> holder data, deleted with each release
 *   {K}:ww  waiting writers: sorted set owner -> until (server ms); readers keep out (Redlock)
 *   {K}:rw  waiting readers: the same; a writer's release moves them to {K}:rp (Redlock)
 *   {K}:rp  the read phase's readers, the same: while one is live, writers keep out (Redlock)
 * The tag is `{fullKey}`, or, when the key itself holds a brace (only a literal key can:
 * interpolated values are encoded), `{#<sha1>}fullKey`, so a brace can never split a lock's keys
 * across slots. Both forms are injective and cannot meet.
 */
export interface LockKeys {
  readonly writer: string;
  readonly readers: string;
  readonly fence: string;
  readonly queue: string;
  readonly waiters: string;
  readonly holder: string;
  readonly holders: string;
  readonly writersWaiting: string;
  readonly readersWaiting: string;
  readonly readPhase: string;
}

/**
 * The Redis backend's seven, in the order the scripts that touch every part of a lock declare
 * their KEYS.
 */
export function everyLockKey(k: LockKeys): string[] {
  return [k.writer, k.readers, k.fence, k.queue, k.waiters, k.holder, k.holders];
}

/**
 * `make(fullKey)`, remembered for the last few hundred keys (a lock's acquire and release, and a
 * semaphore's, name the same one): bounded, emptied when full. Names are pure functions of the key.
 */
export function recentKeys<K>(make: (fullKey: string) => K, size = 256): (fullKey: string) => K {
  const cache = new Map<string, K>();
  return (fullKey) => {
    let keys = cache.get(fullKey);
    if (keys !== undefined) return keys;
    keys = make(fullKey);
    if (cache.size >= size) cache.clear();
    cache.set(fullKey, keys);
    return keys;
  };
}

export const lockKeys = recentKeys((fullKey): LockKeys => {
  const tag = hashTag(fullKey);
  return {
    writer: tag,
    readers: `${tag}:r`,
    fence: `${tag}:f`,
    queue: `${tag}:q`,
    waiters: `${tag}:w`,
    holder: `${tag}:h`,
    holders: `${tag}:hr`,
    writersWaiting: `${tag}:ww`,
    readersWaiting: `${tag}:rw`,
    readPhase: `${tag}:rp`,
  };
});

/** The hash tag of a lock's keys, `{fullKey}` or `{#<sha1>}fullKey` (see above). */
function hashTag(fullKey: string): string {
  return fullKey.includes('{') || fullKey.includes('}')
    ? `{#${createHash('sha1').update(fullKey).digest('hex')}}${fullKey}`
    : `{${fullKey}}`;
}
