import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import {
  fencingGrant,
  MAX_FENCING_TOKEN,
  toFencingGrant,
  type FencingGrant,
  type FencingHandleLike,
} from './fencing-token';

/**
 * How a lock holder tells a downstream service which grant a call belongs to: the lock key, its
 * fencing token and the grant's id, in one value `<token>; key=<key, percent-encoded>;
 * grant=<id>` (one value, so they can never be split across proxies that merge or drop headers).
 * Over HTTP it is the header `x-fencing-token`; over gRPC the metadata entry of the same name;
 * over other microservice transports a `fencing` field of the message payload.
 */
export const FENCING_HEADER = 'x-fencing-token';
export const FENCING_FIELD = 'fencing';

/** The grant a call carries (`grant` '' when the caller sent none). */
export interface FencingCarrier {
  readonly key: string;
  readonly token: bigint;
  readonly grant: string;
}

/**
 * What the caller-side helpers accept: a LockHandle of one key, `fencingGrant(handle, key)` (one
 * key of a multi-key handle), or a key and a bare token.
 */
export type FencingSource =
  | (FencingHandleLike & { readonly key: string })
  | (FencingGrant & { readonly key: string })
  | { readonly key: string; readonly token: bigint | number | string };

function carrierOf(source: FencingSource): FencingCarrier {
  if ('fencingToken' in source) {
    const keys = source.keys ?? [];
    if (keys.length > 1)
      throw new InvalidLockOptionsError(
        'source',
        `a handle of keys ${keys.join(', ')}`,
        "one key's grant: fencingHeaders(fencingGrant(handle, key)), naming the key whose lock " +
          'the callee fences',
      );
    const g = fencingGrant(source);
    return { key: g.key, token: g.token, grant: g.grant };
  }
  const g = toFencingGrant('grant' in source ? source : source.token, 'token');
  return { key: source.key, token: g.token, grant: g.grant };
}

/** `<token>; key=<percent-encoded key>[; grant=<id>]`. */
export function formatFencing(source: FencingSource): string {
  const { key, token, grant } = carrierOf(source);
  if (typeof key !== 'string' || key === '')
    throw new InvalidLockOptionsError('key', key, 'the lock key (a non-empty string)');
  return `${token}; key=${encodeURIComponent(key)}${grant ? `; grant=${grant}` : ''}`;
}

const CARRIED =
  /^\s*(0|[1-9][0-9]{0,18})\s*;\s*key=([^\s;]+)\s*(?:;\s*grant=([A-Za-z0-9_-]{1,64})\s*)?$/;

/** Parses `formatFencing`'s value; undefined when it is not one (a token past 2^63-1 included). */
export function parseFencing(value: unknown): FencingCarrier | undefined {
  if (Array.isArray(value)) value = value[0];
  if (Buffer.isBuffer(value)) value = value.toString('utf8');
  if (typeof value !== 'string') return undefined;
  const match = CARRIED.exec(value);
  if (!match) return undefined;
  const token = BigInt(match[1]);
  if (token > MAX_FENCING_TOKEN) return undefined;
  try {
    const key = decodeURIComponent(match[2]);
    return key === '' ? undefined : { key, token, grant: match[3] ?? '' };
  } catch {
    return undefined; // malformed percent-encoding
  }
}

/** HTTP headers to send with a call made under `source`: `{ 'x-fencing-token': ... }`. */
export function fencingHeaders(source: FencingSource): Record<string, string> {
  return { [FENCING_HEADER]: formatFencing(source) };
}

/** `payload` with the `fencing` field a @Fenced message handler reads. */
export function withFencing<T extends object>(
  payload: T,
  source: FencingSource,
): T & { fencing: string } {
  return { ...payload, [FENCING_FIELD]: formatFencing(source) } as T & { fencing: string };
}
