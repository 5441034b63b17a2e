import { createHash } from 'node:crypto';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { StaleFencingTokenError } from '../errors/stale-fencing-token.error';

/**
 * The largest token a store accepts: 2^63 - 1, what a signed BIGINT holds. A larger one would wrap
 * (MySQL) or fail to compare (PostgreSQL), so it is refused everywhere, Redis and memory included.
 */
export const MAX_FENCING_TOKEN = 2n ** 63n - 1n;

/**
 * One grant's credentials for a fenced write: the token, and the id of the grant it came from.
 * Stores record both; a write with the highest token is accepted only from the same grant, so a
 * token repeated by another grant (a lossy failover) is refused while the holder writes on.
 * `grant` is '' for a bare token (a grant that cannot be told apart from another bare token).
 */
export interface FencingGrant {
  /** The lock key whose token this is (the carrier sends it; stores ignore it). */
  readonly key?: string;
  readonly token: bigint;
  /** The grant id: letters, digits, `_` and `-`, up to 64; '' for a bare token. */
  readonly grant: string;
}

/** What a handle gives the fenced writes: its token, owner and keys (LockHandle has them all). */
export interface FencingHandleLike {
  readonly fencingToken: bigint;
  readonly owner?: string;
  readonly key?: string;
  readonly keys?: readonly string[];
  readonly fencingTokens?: ReadonlyMap<string, bigint>;
}

/**
 * A fencing token as the fenced writes accept it: a LockHandle of one key (its token and grant),
 * `fencingGrant(handle, key)` (one key of a multi-key handle), or a bare token: the bigint of
 * `handle.fencingToken`, or a non-negative integer as a number or decimal string (what a token
 * looks like after it crossed a wire).
 */
export type FencingTokenLike = bigint | number | string | FencingHandleLike | FencingGrant;

const GRANT = /^[A-Za-z0-9_-]{0,64}$/;

/**
 * The id of the grant an owner token belongs to: the first 128 bits of its SHA-256, hex. Not the
 * owner itself: the owner is what releases and extends the lock, and a fence record may sit in
 * another system (a SQL table, a downstream service); the hash names the grant without handing
 * anyone the power to release it.
 */
export function grantIdOf(owner: string): string {
  // A holder writes many times under one grant: the last id is kept, not hashed again.
  if (owner !== lastOwner) {
    lastId = createHash('sha256').update(owner).digest('hex').slice(0, 32);
    lastOwner = owner;
  }
  return lastId;
}
let lastOwner = '';
let lastId = '';

/**
 * The grant of `handle` for one key: the key's own token (a multi-key handle has one per key) and
 * the handle's grant id. A fenced write under a multi-key handle must name the key that protects
 * the resource: each key's tokens order only that key's grants.
 */
export function fencingGrant(handle: FencingHandleLike, key?: string): Required<FencingGrant> {
  const keys = handle?.keys ?? (handle?.key !== undefined ? [handle.key] : []);
  const name = key ?? (keys.length <= 1 ? (keys[0] ?? '') : undefined);
  if (name === undefined)
    throw new InvalidLockOptionsError(
      'key',
      key,
      `one of the handle's keys (${keys.join(', ')}): the key whose lock protects the resource`,
    );
  const token =
    key === undefined || (handle.fencingTokens === undefined && key === handle.key)
      ? handle.fencingToken
      : handle.fencingTokens?.get(key);
  if (token === undefined)
    throw new InvalidLockOptionsError('key', key, `one of the handle's keys (${keys.join(', ')})`);
  return {
    key: name,
    token: checkToken(token, 'token'),
    grant: handle.owner ? grantIdOf(handle.owner) : '',
  };
}

/** The token and grant of `token`; a malformed one (or a handle of several keys) fails loudly. */
export function toFencingGrant(token: FencingTokenLike, option = 'token'): FencingGrant {
  if (typeof token === 'object' && token !== null) {
    if ('fencingToken' in token) {
      const keys = token.keys ?? [];
      if (keys.length > 1)
        throw new InvalidLockOptionsError(
          option,
          `a handle of keys ${keys.join(', ')}`,
          "one key's grant: fencingGrant(handle, key), naming the key whose lock protects the " +
            "resource (each key's tokens order only that key's grants)",
        );
      return fencingGrant(token);
    }
    if ('grant' in token) {
      if (typeof token.grant !== 'string' || !GRANT.test(token.grant))
        throw new InvalidLockOptionsError('grant', token.grant, 'up to 64 of A-Z a-z 0-9 _ -');
      return { key: token.key, token: checkToken(token.token, option), grant: token.grant };
    }
  }
  return { token: checkToken(token, option), grant: '' };
}

/** The token as a bigint; a negative, fractional, malformed or too large token fails loudly. */
export function toFencingToken(token: FencingTokenLike, option = 'token'): bigint {
  return toFencingGrant(token, option).token;
}

function checkToken(raw: unknown, option: string): bigint {
  let t: bigint | undefined;
  if (typeof raw === 'bigint') t = raw;
  else if (typeof raw === 'number' && Number.isSafeInteger(raw)) t = BigInt(raw);
  else if (typeof raw === 'string' && /^(0|[1-9][0-9]{0,18})$/.test(raw)) t = BigInt(raw);
  if (t !== undefined && t >= 0n && t <= MAX_FENCING_TOKEN) return t;
  throw new InvalidLockOptionsError(
    option,
    raw,
    'a fencing token from 0 to 2^63-1: a bigint, safe integer or decimal string, or a LockHandle',
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

/**
 * Write refused: a newer holder had written (or another grant had written with this same token);
 * nothing changed. `error` is ready to throw.
 */
export interface FencedRefused {
  readonly accepted: false;
  readonly resource: string;
  readonly token: bigint;
  /** The highest token the resource had accepted (equal to `token`: another grant's). */
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
