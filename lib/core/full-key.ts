import { checkLockKey } from '../backend-kit/key-encoding';

/**
 * The last key prefix seen clean (no control character, no lone surrogate): once a checked key
 * and this prefix made a clean full key, the prefix itself is clean (a lone high surrogate at its
 * end would have paired only with a lone low surrogate starting the key, which the key's own
 * check rejects).
 */
let cleanPrefix: string | undefined;

/**
 * checkLockKey(prefix + key, maxLength) for a key that already passed checkLockKey(key): with a
 * prefix known clean, prefix + key is clean too, and only its length can fail (the same error,
 * from the same check). Saves the two regular expressions on every acquire.
 */
export function checkFullKey(prefix: string, key: string, maxLength: number): string {
  const fullKey = prefix + key;
  if (prefix === cleanPrefix && fullKey.length <= maxLength) return fullKey;
  checkLockKey(fullKey, maxLength);
  cleanPrefix = prefix;
  return fullKey;
}
