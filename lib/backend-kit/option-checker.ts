import { describe, InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { MAX_DURATION_MS } from './limits';

/**
 * The one option checker. The engine, @Locked, the module and every backend constructor validate
 * with these functions, so every bad option fails the same way: InvalidLockOptionsError naming
 * the option, the value and what is allowed. An unknown option name is an error everywhere (a
 * misspelt `fenceRetenton` would otherwise silently keep the default).
 */

/**
 * Checks that a constructor's `options` is a plain object whose every key is in `known` (unknown
 * names are reported bare, as `fenceRetenton`); returns it typed. `what` names the object.
 */
export function checkOptionsObject<T extends object>(
  what: string,
  options: unknown,
  known: readonly string[],
  example = 'an object',
): T & Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidLockOptionsError(what, options, example);
  }
  checkKnownOptions('', options, known);
  return options as T & Record<string, unknown>;
}

/**
 * Rejects any key of `options` not in `known`, naming it (as `prefix.name`, or bare with an empty
 * prefix) and listing the known ones.
 */
export function checkKnownOptions(prefix: string, options: object, known: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      const value = (options as Record<string, unknown>)[name];
      throw new InvalidLockOptionsError(
        prefix ? `${prefix}.${name}` : name,
        value,
        `one of ${known.join(', ')} (unknown option${suggest(name, known)})`,
      );
    }
  }
}

/** An integer number of ms from `min` to MAX_DURATION_MS (the largest delay a timer honours). */
export function checkDuration(option: string, value: unknown, min: number, key?: string): number {
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < min ||
    value > MAX_DURATION_MS
  ) {
    throw new InvalidLockOptionsError(
      option,
      value,
      `an integer number of ms from ${min} to ${MAX_DURATION_MS}`,
      key,
    );
  }
  return value;
}

/** An integer from `min` to `max`. */
export function checkInteger(
  option: string,
  value: unknown,
  min: number,
  max: number,
  key?: string,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidLockOptionsError(option, value, `an integer from ${min} to ${max}`, key);
  }
  return value;
}

/** A finite number from `min` to `max`. */
export function checkNumber(
  option: string,
  value: unknown,
  min: number,
  max: number,
  hint = '',
): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new InvalidLockOptionsError(option, value, `a number from ${min} to ${max}${hint}`);
  }
  return value;
}

/** true or false; `fallback` when undefined. */
export function checkBoolean(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidLockOptionsError(option, value, 'true or false');
  return value;
}

/** A non-empty string; `fallback` when undefined. */
export function checkString(option: string, value: unknown, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidLockOptionsError(option, value, 'a non-empty string');
  }
  return value;
}

/** One of `allowed` (compared with ===). */
export function checkOneOf<T>(
  option: string,
  value: unknown,
  allowed: readonly T[],
  key?: string,
): T {
  if (!allowed.includes(value as T)) {
    const names = allowed.map((a) => (typeof a === 'string' ? `'${a}'` : describe(a)));
    const list =
      names.length > 1
        ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`
        : names[0];
    throw new InvalidLockOptionsError(option, value, list, key);
  }
  return value as T;
}

/** A client object with every method in `methods`; `what` says which client is expected. */
export function checkClient<T>(
  option: string,
  client: unknown,
  methods: readonly string[],
  what: string,
): T {
  const missing =
    client === null || typeof client !== 'object'
      ? ['an object']
      : methods.filter((m) => typeof (client as Record<string, unknown>)[m] !== 'function');
  if (missing.length > 0) {
    throw new InvalidLockOptionsError(option, client, `${what} (missing: ${missing.join(', ')})`);
  }
  return client as T;
}

/** ", did you mean x?" when one known name is a close spelling of `name`. */
function suggest(name: string, known: readonly string[]): string {
  const close = known.find((k) => distance(k.toLowerCase(), name.toLowerCase()) <= 2);
  return close ? `; did you mean "${close}"?` : '';
}

function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length];
}
