import { createHmac, timingSafeEqual } from 'node:crypto';
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
  /** The caller's signature over key, token and grant (`secret` option), when it sent one. */
  readonly sig?: string;
}

/**
 * Signing a carried grant: an HMAC-SHA256 over token, key and grant with a secret shared by the
 * services allowed to take locks and the callee, which then refuses calls not signed with it. It
 * proves the caller knows the secret, not that it holds the lock.
 */
export interface FencingSignOptions {
  /** At least 16 characters (or bytes). */
  secret?: string | Buffer;
}

const MIN_SECRET_LENGTH = 16;

/** The secret, checked (the option is named in the error). */
export function checkFencingSecret(secret: unknown): string | Buffer {
  if ((typeof secret === 'string' || Buffer.isBuffer(secret)) && secret.length >= MIN_SECRET_LENGTH)
    return secret;
  throw new InvalidLockOptionsError(
    'secret',
    Buffer.isBuffer(secret) ? `a Buffer of ${secret.length} bytes` : typeof secret,
    `a string or Buffer of at least ${MIN_SECRET_LENGTH} characters`,
  );
}

function signature(secret: string | Buffer, c: FencingCarrier): string {
  return createHmac('sha256', secret)
    .update(`${c.token}\n${c.key}\n${c.grant}`)
    .digest('base64url');
}

/** True when `carrier` is signed with one of `secrets` (several: a secret being rotated). */
export function verifyFencing(
  carrier: FencingCarrier,
  secrets: string | Buffer | readonly (string | Buffer)[],
): boolean {
  if (!carrier.sig) return false;
  const sent = Buffer.from(carrier.sig);
  return (Array.isArray(secrets) ? secrets : [secrets]).some((secret: string | Buffer) => {
    const expected = Buffer.from(signature(secret, carrier));
    return expected.length === sent.length && timingSafeEqual(expected, sent);
  });
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

/** `<token>; key=<percent-encoded key>[; grant=<id>][; sig=<HMAC, base64url>]`. */
export function formatFencing(source: FencingSource, options: FencingSignOptions = {}): string {
  const carrier = carrierOf(source);
  const { key, token, grant } = carrier;
  if (typeof key !== 'string' || key === '')
    throw new InvalidLockOptionsError('key', key, 'the lock key (a non-empty string)');
  const sig =
    options.secret === undefined
      ? ''
      : `; sig=${signature(checkFencingSecret(options.secret), carrier)}`;
  return `${token}; key=${encodeURIComponent(key)}${grant ? `; grant=${grant}` : ''}${sig}`;
}

const CARRIED =
  /^\s*(0|[1-9][0-9]{0,18})\s*;\s*key=([^\s;]+)\s*(?:;\s*grant=([A-Za-z0-9_-]{1,64})\s*)?(?:;\s*sig=([A-Za-z0-9_-]{43})\s*)?$/;

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
    if (key === '') return undefined;
    const carrier = { key, token, grant: match[3] ?? '' };
    return match[4] ? { ...carrier, sig: match[4] } : carrier;
  } catch {
    return undefined; // malformed percent-encoding
  }
}

/**
 * HTTP headers to send with a call made under `source`: `{ 'x-fencing-token': ... }`, signed
 * when `options.secret` is given.
 */
export function fencingHeaders(
  source: FencingSource,
  options?: FencingSignOptions,
): Record<string, string> {
  return { [FENCING_HEADER]: formatFencing(source, options) };
}

/** `payload` with the `fencing` field a @Fenced message handler reads (signed with a secret). */
export function withFencing<T extends object>(
  payload: T,
  source: FencingSource,
  options?: FencingSignOptions,
): T & { fencing: string } {
  const fencing = formatFencing(source, options);
  return { ...payload, [FENCING_FIELD]: fencing } as T & { fencing: string };
}
