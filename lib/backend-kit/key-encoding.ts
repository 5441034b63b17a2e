import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { MAX_KEY_LENGTH } from './limits';

/**
 * Key encoding, shared by the engine (templates) and every backend. Keys are a security boundary:
 * a value interpolated from a request is encoded so that it can never produce another lock's key,
 * escape a path (`/`, `..`) or change a Redis Cluster hash slot (`{`, `}`). Every character outside
 * [A-Za-z0-9_-] becomes %XX of its UTF-8 bytes, which is injective: two different values never
 * encode alike.
 */
const SAFE = /^[A-Za-z0-9_-]$/;
/** A value made only of safe characters encodes to itself (the common case: ids). */
const ALL_SAFE = /^[A-Za-z0-9_-]*$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
/**
 * A UTF-16 surrogate that is not part of a pair: UTF-8 cannot carry it (it would become U+FFFD and
 * collide).
 */
export const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Encodes one value for use inside a key (exported for function keys that build their own).
 * `maxLength` bounds the work: a value longer than it fails before any scan (every character
 * encodes to at least one), and encoding stops as soon as the output passes it, so a 10 MB request
 * body costs nothing before its rejection. Default MAX_KEY_LENGTH: no key can hold a longer part.
 */
export function encodeKeyPart(
  value: string | number | bigint,
  maxLength: number = MAX_KEY_LENGTH,
): string {
  const text = String(value);
  if (text.length > maxLength) throw tooLong(value, maxLength);
  if (ALL_SAFE.test(text)) return text;
  if (LONE_SURROGATE.test(text)) {
    throw new InvalidLockOptionsError(
      'key',
      value,
      'text without lone UTF-16 surrogates (they cannot be encoded distinctly)',
    );
  }
  let out = '';
  for (const ch of text) {
    if (SAFE.test(ch)) out += ch;
    else
      for (const byte of Buffer.from(ch, 'utf8'))
        out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (out.length > maxLength) throw tooLong(value, maxLength);
  }
  return out;
}

function tooLong(value: unknown, maxLength: number): InvalidLockOptionsError {
  return new InvalidLockOptionsError(
    'key',
    value,
    `a value of at most ${maxLength} characters once encoded`,
  );
}

/**
 * The last key that passed checkLockKey with the default limit: a key used again (a job's, a hot
 * resource's) is not scanned again. A string is a value: the same string passes the same way.
 */
let lastChecked = '';

/**
 * Checks a final key (prefix included): a non-empty string, no control characters, within the
 * limit.
 */
export function checkLockKey(key: unknown, maxLength = MAX_KEY_LENGTH): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidLockOptionsError('key', key, 'a non-empty string');
  }
  if (key === lastChecked && maxLength === MAX_KEY_LENGTH) return key;
  if (key.length > maxLength) {
    throw new InvalidLockOptionsError(
      'key',
      key,
      `at most ${maxLength} characters (got ${key.length})`,
    );
  }
  if (CONTROL.test(key)) {
    throw new InvalidLockOptionsError(
      'key',
      key,
      'no control characters (encode values with encodeKeyPart)',
    );
  }
  if (LONE_SURROGATE.test(key)) {
    throw new InvalidLockOptionsError(
      'key',
      key,
      'no lone UTF-16 surrogates (UTF-8 backends would merge them into U+FFFD)',
    );
  }
  if (maxLength === MAX_KEY_LENGTH) lastChecked = key;
  return key;
}
