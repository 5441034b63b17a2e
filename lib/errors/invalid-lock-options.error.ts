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

export function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (Array.isArray(value)) return `array(${value.length})`;
  if (value === null || typeof value !== 'object') return String(value);
  return `object ${value.constructor?.name ?? 'Object'}`;
}
