import { checkDuration, checkKnownOptions, checkOneOf } from '../../backend-kit/option-checker';
import {
  DEFAULT_BACKEND_NAME,
  DEFAULT_TTL_MS,
  DEFAULT_WAIT_MS,
  MIN_TTL_MS,
} from '../../distributed-lock.constants';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LockMode } from '../../interfaces/lock-backend.interface';
import type {
  LockDefaults,
  LockOnBusy,
  LockOptions,
  ResolvedLockOptions,
} from '../../interfaces/lock-options.interface';

/**
 * The one place where lock options are validated and defaulted. Runs for forRoot, forRootAsync,
 * @Locked (at decoration time) and every LockService call alike.
 */
const MODES: readonly LockMode[] = ['exclusive', 'shared'];
const ON_BUSY: readonly LockOnBusy[] = ['wait', 'skip', 'fail'];

export { checkDuration };

export function checkMode(option: string, value: unknown, key?: string): LockMode {
  return checkOneOf(option, value, MODES, key);
}

export function checkOnBusy(option: string, value: unknown, key?: string): LockOnBusy {
  return checkOneOf(option, value, ON_BUSY, key);
}

function checkObject(option: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidLockOptionsError(option, value, 'an object');
  }
  return value as Record<string, unknown>;
}

const DEFAULT_KEYS = new Set(['ttl', 'wait', 'mode', 'onBusy', 'maxHold', 'minHold']);
const CALL_KEYS = new Set([
  'ttl',
  'wait',
  'mode',
  'backend',
  'maxHold',
  'minHold',
  'permits',
  'signal',
  'onBusy',
]);

function rejectUnknown(option: string, value: Record<string, unknown>, allowed: Set<string>): void {
  // Per call: a Set lookup per own key (for-in: no array of the keys); the list for the error
  // message is built only on failure.
  for (const name in value)
    if (Object.prototype.hasOwnProperty.call(value, name) && !allowed.has(name))
      checkKnownOptions(option, value, [...allowed]);
}

/** Per defaults object (per engine): the resolution of "no options", computed once. */
const noOptions = new WeakMap<
  ResolvedDefaults,
  Map<readonly string[] | undefined, ResolvedLockOptions>
>();

/**
 * true when no option that resolveLockOptions resolves is set (permits is the caller's business).
 */
function resolvesToDefaults(o: LockOptions): boolean {
  return (
    o.ttl === undefined &&
    o.wait === undefined &&
    o.mode === undefined &&
    o.backend === undefined &&
    o.maxHold === undefined &&
    o.minHold === undefined &&
    o.signal === undefined
  );
}

/** The cached resolution of "no options" for these defaults and backend names, if any. */
function cachedDefaults(
  defaults: ResolvedDefaults,
  names: readonly string[] | undefined,
): ResolvedLockOptions | undefined {
  return noOptions.get(defaults)?.get(names);
}

/** Validates module-level defaults; every missing one takes the package default. */
export function resolveDefaults(
  input: unknown,
  option = 'defaults',
): Required<Omit<LockDefaults, 'maxHold' | 'minHold'>> & {
  maxHold: number | undefined;
  minHold: number | undefined;
} {
  const d = checkObject(option, input);
  rejectUnknown(option, d, DEFAULT_KEYS);
  return {
    ttl: d.ttl === undefined ? DEFAULT_TTL_MS : checkDuration(`${option}.ttl`, d.ttl, MIN_TTL_MS),
    wait: d.wait === undefined ? DEFAULT_WAIT_MS : checkDuration(`${option}.wait`, d.wait, 0),
    mode: d.mode === undefined ? 'exclusive' : checkMode(`${option}.mode`, d.mode),
    onBusy: d.onBusy === undefined ? 'wait' : checkOnBusy(`${option}.onBusy`, d.onBusy),
    maxHold: d.maxHold === undefined ? undefined : checkDuration(`${option}.maxHold`, d.maxHold, 1),
    minHold: d.minHold === undefined ? undefined : checkDuration(`${option}.minHold`, d.minHold, 1),
  };
}

export type ResolvedDefaults = ReturnType<typeof resolveDefaults>;

/** Validates the options of one call (or one @Locked declaration) over the resolved defaults. */
export function resolveLockOptions(
  input: LockOptions | undefined,
  defaults: ResolvedDefaults,
  backendNames: readonly string[] | undefined,
  key?: string,
): ResolvedLockOptions {
  if (input === undefined) {
    const cached = cachedDefaults(defaults, backendNames);
    if (cached) return cached;
  }
  const o = checkObject('options', input) as LockOptions & Record<string, unknown>;
  rejectUnknown('options', o, CALL_KEYS);
  if (input !== undefined && resolvesToDefaults(o)) {
    // Nothing but permits (or unset fields): the same resolution as no options at all.
    const cached = cachedDefaults(defaults, backendNames);
    if (cached) return cached;
  }
  const backend = o.backend === undefined ? DEFAULT_BACKEND_NAME : o.backend;
  if (
    typeof backend !== 'string' ||
    (backendNames !== undefined && !backendNames.includes(backend))
  ) {
    throw new InvalidLockOptionsError(
      'backend',
      backend,
      backendNames ? backendNames.map((n) => `'${n}'`).join(', ') : 'a registered backend name',
      key,
    );
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new InvalidLockOptionsError('signal', o.signal, 'an AbortSignal', key);
  }
  const resolved: ResolvedLockOptions = {
    ttl: o.ttl === undefined ? defaults.ttl : checkDuration('ttl', o.ttl, MIN_TTL_MS, key),
    wait: o.wait === undefined ? defaults.wait : checkDuration('wait', o.wait, 0, key),
    mode: o.mode === undefined ? defaults.mode : checkMode('mode', o.mode, key),
    backend,
    maxHold:
      o.maxHold === undefined ? defaults.maxHold : checkDuration('maxHold', o.maxHold, 1, key),
    minHold:
      o.minHold === undefined ? defaults.minHold : checkDuration('minHold', o.minHold, 1, key),
    signal: o.signal,
  };
  const { minHold, maxHold } = resolved;
  if (minHold !== undefined && maxHold !== undefined && minHold > maxHold) {
    throw new InvalidLockOptionsError('minHold', minHold, `at most maxHold (${maxHold} ms)`, key);
  }
  if (input === undefined) {
    let byNames = noOptions.get(defaults);
    if (!byNames) noOptions.set(defaults, (byNames = new Map()));
    byNames.set(backendNames, Object.freeze(resolved));
  }
  return resolved;
}
