import { createHash } from 'node:crypto';

/**
 * What a release announcement carries instead of the key: the first 128 bits of the
 * key's SHA-256, hex. Anyone who can LISTEN on the channel learns that SOME key was released, not
 * which tenant's order it was; a waiter compares digests. A collision only wakes a waiter early
 * (it re-attempts, and the acquire decides), never grants anything.
 */
export const KEY_DIGEST_HEX = 32;

export function keyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex').slice(0, KEY_DIGEST_HEX);
}
