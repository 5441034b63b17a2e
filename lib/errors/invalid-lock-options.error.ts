import { DistributedLockError } from './distributed-lock.error';

/** An option has a value that cannot work. Names the option, the value and what is allowed. */
export class InvalidLockOptionsError extends DistributedLockError {
  readonly option: string;
  /** What the option allows (the message's "allowed:" part), for code that explains it further. */
  readonly allowed: string;
  /** The value, described safely (strings cut at 80 characters, no object contents). */
  readonly got: string;

  constructor(option: string, value: unknown, allowed: string, key?: string) {
    super(
      'INVALID_LOCK_OPTIONS',
      `Invalid lock option "${option}": got ${describe(value)}; allowed: ${allowed}`,
      {
        key,
      },
    );
    this.option = option;
    this.allowed = allowed;
    this.got = describe(value);
  }
}

/** Keys of a plain object shown in a message; more are summarised. */
const SHOWN_KEYS = 6;

/**
 * A value as a message shows it: strings quoted and cut at 80 characters, a plain object's own
 * keys with their values one level deep (`{ count: 1, timeout: 100 }`), an instance by its class
 * (a client's contents are nobody's business in a message).
 */
export function describe(value: unknown, depth = 0): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (Array.isArray(value)) return `array(${value.length})`;
  if (value === null || typeof value !== 'object') return String(value);
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null)
    return `object ${value.constructor?.name ?? 'Object'}`;
  if (depth > 0) return '{...}';
  const keys = Object.keys(value);
  if (keys.length === 0) return '{}';
  const shown = keys
    .slice(0, SHOWN_KEYS)
    .map(
      (k) =>
        `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k.slice(0, 40))}: ${describe((value as Record<string, unknown>)[k], depth + 1)}`,
    );
  if (keys.length > SHOWN_KEYS) shown.push(`... ${keys.length - SHOWN_KEYS} more`);
  return `{ ${shown.join(', ')} }`;
}
