/**
 * Typed placeholders: `<id:int>`, `<id:uuid>`. A request value reaches a key as it was received, so
 * `1`, `01`, `1.0` and ` 1` would be four different locks on one order. A typed placeholder accepts
 * exactly one spelling per value (the canonical one, or one it canonicalises, such as a uuid's
 * case) and rejects every other with LockKeyResolutionError (400 over HTTP).
 */
export interface KeyType {
  /** What the type accepts, for error messages. */
  readonly expected: string;
  /** The canonical text of `value`, or undefined when it is not a valid value of this type. */
  canonical(value: unknown): string | undefined;
}

const INT = /^(?:0|-?[1-9][0-9]*)$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const KEY_TYPES: Readonly<Record<string, KeyType>> = Object.freeze({
  int: {
    expected:
      'a canonical integer (a safe integer number, a bigint, or decimal digits with no sign but "-", no leading zeros, spaces, "+", exponent or fraction)',
    canonical(value) {
      if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : undefined;
      if (typeof value === 'bigint') return value.toString();
      return typeof value === 'string' && INT.test(value) ? value : undefined;
    },
  },
  uuid: {
    expected:
      'a uuid in its 8-4-4-4-12 hexadecimal form (no braces or spaces); letters are lower-cased',
    canonical(value) {
      return typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : undefined;
    },
  },
});
