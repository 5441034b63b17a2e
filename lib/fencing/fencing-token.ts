import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { StaleFencingTokenError } from '../errors/stale-fencing-token.error';

/**
 * A fencing token as the fenced writes accept it: the bigint of `handle.fencingToken`, the handle
 * itself (anything with a `fencingToken`), or a non-negative integer as a number or decimal string
 * (what a token looks like after it crossed a wire).
 */
export type FencingTokenLike = bigint | number | string | { readonly fencingToken: bigint };

/** The token as a bigint; a negative, fractional or malformed token fails loudly (never 0). */
export function toFencingToken(token: FencingTokenLike, option = 'token'): bigint {
  const raw = typeof token === 'object' && token !== null ? token.fencingToken : token;
  if (typeof raw === 'bigint' && raw >= 0n) return raw;
  if (typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0) return BigInt(raw);
  if (typeof raw === 'string' && /^(0|[1-9][0-9]{0,19})$/.test(raw)) return BigInt(raw);
  throw new InvalidLockOptionsError(
    option,
    raw,
    'a fencing token: a non-negative bigint, safe integer or decimal string, or a LockHandle',
  );
}

/** Write accepted: the token was current (>= the highest the resource had seen). */
export interface FencedAccepted<T> {
  readonly accepted: true;
  readonly resource: string;
  readonly token: bigint;
  /** What the write returned (Redis reply, SQL rows changed, your function's value). */
  readonly value: T;
}

/** Write refused: a newer holder had written; nothing changed. `error` is ready to throw. */
export interface FencedRefused {
  readonly accepted: false;
  readonly resource: string;
  readonly token: bigint;
  /** The highest token the resource had accepted. */
  readonly highest: bigint;
  readonly error: StaleFencingTokenError;
}

/** The typed outcome of every fenced write: check `accepted`, or call `fencedValue()`. */
export type FencedResult<T> = FencedAccepted<T> | FencedRefused;

export function accepted<T>(resource: string, token: bigint, value: T): FencedAccepted<T> {
  return { accepted: true, resource, token, value };
}

export function refused(resource: string, token: bigint, highest: bigint): FencedRefused {
  const error = new StaleFencingTokenError({ resource, token, highest });
  return { accepted: false, resource, token, highest, error };
}

/** The accepted write's value, or throws its StaleFencingTokenError. */
export function fencedValue<T>(result: FencedResult<T>): T {
  if (!result.accepted) throw result.error;
  return result.value;
}
