import { createHash } from 'node:crypto';

/**
 * The Redis keys of one lock, all in the slot of one hash tag so every script touches one slot and
 * runs unchanged on Redis Cluster:
 *   {K}     exclusive holder: owner token, PX ttl
 *   {K}:r   shared holders: sorted set owner -> expiry (server ms), PEXPIREAT the latest expiry
 *   {K}:f   fence: last token issued (see fenceRetention)
 *   {K}:q   waiters in arrival order: sorted set owner -> arrival (server µs)   (Redis backend)
 *   {K}:w   the waiters' grant details: hash owner -> "deadline|mode|ttl|channel" (Redis backend)
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
}

/** Recently used keys (a lock's acquire and release name the same one): bounded, emptied when full. */
const CACHE_SIZE = 256;
const cache = new Map<string, LockKeys>();

export function lockKeys(fullKey: string): LockKeys {
  let keys = cache.get(fullKey);
  if (keys !== undefined) return keys;
  const tag = hashTag(fullKey);
  keys = {
    writer: tag,
    readers: `${tag}:r`,
    fence: `${tag}:f`,
    queue: `${tag}:q`,
    waiters: `${tag}:w`,
  };
  if (cache.size >= CACHE_SIZE) cache.clear();
  cache.set(fullKey, keys);
  return keys;
}

/** The hash tag of a lock's keys, `{fullKey}` or `{#<sha1>}fullKey` (see above). */
function hashTag(fullKey: string): string {
  return fullKey.includes('{') || fullKey.includes('}')
    ? `{#${createHash('sha1').update(fullKey).digest('hex')}}${fullKey}`
    : `{${fullKey}}`;
}
