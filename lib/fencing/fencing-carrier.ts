import { toFencingToken } from './fencing-token';

/**
 * How a lock holder tells a downstream service which grant a call belongs to: the lock key and
 * its fencing token, in one value `<token>; key=<key, percent-encoded>` (one value, so the two can
 * never be split across proxies that merge or drop headers). Over HTTP it is the header
 * `x-fencing-token`; over gRPC the metadata entry of the same name; over other microservice
 * transports a `fencing` field of the message payload.
 */
export const FENCING_HEADER = 'x-fencing-token';
export const FENCING_FIELD = 'fencing';

/** The grant a call carries. */
export interface FencingCarrier {
  readonly key: string;
  readonly token: bigint;
}

/** What the caller-side helpers accept: a LockHandle, or the key and token. */
export type FencingSource =
  | { readonly key: string; readonly fencingToken: bigint }
  | { readonly key: string; readonly token: bigint | number | string };

function carrierOf(source: FencingSource): FencingCarrier {
  const token = 'fencingToken' in source ? source.fencingToken : source.token;
  return { key: source.key, token: toFencingToken(token) };
}

/** `<token>; key=<percent-encoded key>`. */
export function formatFencing(source: FencingSource): string {
  const { key, token } = carrierOf(source);
  return `${token}; key=${encodeURIComponent(key)}`;
}

/** Parses `formatFencing`'s value; undefined when it is not one. */
export function parseFencing(value: unknown): FencingCarrier | undefined {
  if (Array.isArray(value)) value = value[0];
  if (Buffer.isBuffer(value)) value = value.toString('utf8');
  if (typeof value !== 'string') return undefined;
  const match = /^\s*(0|[1-9][0-9]{0,19})\s*;\s*key=([^\s;]+)\s*$/.exec(value);
  if (!match) return undefined;
  try {
    const key = decodeURIComponent(match[2]);
    return key === '' ? undefined : { key, token: BigInt(match[1]) };
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
