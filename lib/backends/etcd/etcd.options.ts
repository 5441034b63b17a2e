import { checkDuration, checkOptionsObject } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/**
 * Options of EtcdLockBackend: exactly one of `client` (yours: you close it) or `clientFactory`
 * (the backend's: it creates the client on first use and closes it in close()).
 */
export interface EtcdLockBackendOptions {
  /** An etcd3 `Etcd3` client you created (not a namespace); you keep owning and closing it. */
  client?: unknown;
  /**
   * Creates the etcd3 `Etcd3` client the backend owns, e.g.
   * `() => new Etcd3({ hosts: config.getOrThrow('ETCD_HOSTS') })`. Called once, on the first
   * request; the backend closes the client in close(). Give this or `client`, not both.
   */
  clientFactory?: () => unknown;
  /**
   * TTL of the session lease in ms: how long locks of a crashed or partitioned process survive.
   * etcd leases are whole seconds and its minimum is 2 s: a multiple of 1000, >= 2000. Default
   * 10000.
   */
  sessionTtl?: number;
  /**
   * Prepended to every etcd key, e.g. 'locks/'. Default ''. `etcdctl lock <prefix><NAME>`
   * interoperates.
   */
  prefix?: string;
  /** ms one etcd request may take before it counts as failed. Default 5000. */
  callTimeout?: number;
}

export const DEFAULT_ETCD_SESSION_TTL_MS = 10_000;
export const DEFAULT_ETCD_CALL_TIMEOUT_MS = 5_000;
const KNOWN = ['client', 'clientFactory', 'sessionTtl', 'prefix', 'callTimeout'] as const;
const MAX_PREFIX_LENGTH = 256;
const MAX_CALL_TIMEOUT_MS = 600_000;
const MAX_SESSION_TTL_MS = 1_000_000_000;

export interface CheckedEtcdOptions {
  readonly client?: unknown;
  readonly clientFactory?: () => unknown;
  readonly sessionTtl: number;
  readonly prefix: string;
  readonly callTimeout: number;
}

/** Validates the backend's options with the kit's checker; every error names the option. */
export function checkEtcdOptions(options: unknown): CheckedEtcdOptions {
  const o = checkOptionsObject<EtcdLockBackendOptions>(
    'options',
    options,
    KNOWN,
    'an object { client } or { clientFactory } (+ sessionTtl?, prefix?, callTimeout?)',
  );
  checkClientChoice(o);
  const sessionTtl = checkSessionTtl(o.sessionTtl);
  const callTimeout = checkCallTimeout(o.callTimeout);
  const prefix = checkPrefix(o.prefix);
  return { client: o.client, clientFactory: o.clientFactory, sessionTtl, prefix, callTimeout };
}

/** Exactly one of `client` and `clientFactory`, and a factory must be a function. */
function checkClientChoice(o: EtcdLockBackendOptions): void {
  if ((o.client === undefined) === (o.clientFactory === undefined)) {
    throw new InvalidLockOptionsError(
      o.client === undefined ? 'client' : 'clientFactory',
      o.client === undefined ? undefined : o.clientFactory,
      'exactly one of client (an etcd3 Etcd3 client you own) or clientFactory (a function returning one the backend owns)',
    );
  }
  if (o.clientFactory !== undefined && typeof o.clientFactory !== 'function') {
    throw new InvalidLockOptionsError(
      'clientFactory',
      o.clientFactory,
      'a function returning an etcd3 Etcd3 client (or a Promise of one)',
    );
  }
}

/** `sessionTtl` (default applied): whole seconds in ms, at least 2000. */
function checkSessionTtl(value: EtcdLockBackendOptions['sessionTtl']): number {
  const ttl = value === undefined ? DEFAULT_ETCD_SESSION_TTL_MS : value;
  if (
    typeof ttl !== 'number' ||
    !Number.isInteger(ttl) ||
    ttl < 2_000 ||
    ttl % 1_000 !== 0 ||
    ttl > MAX_SESSION_TTL_MS
  ) {
    throw new InvalidLockOptionsError(
      'sessionTtl',
      ttl,
      'whole seconds in ms, at least 2000 (etcd leases are whole seconds; etcd raises shorter ones to its 2 s minimum)',
    );
  }
  return ttl;
}

/** `callTimeout` (default applied): an integer number of ms up to MAX_CALL_TIMEOUT_MS. */
function checkCallTimeout(value: EtcdLockBackendOptions['callTimeout']): number {
  const callTimeout = checkDuration(
    'callTimeout',
    value === undefined ? DEFAULT_ETCD_CALL_TIMEOUT_MS : value,
    1,
  );
  if (callTimeout > MAX_CALL_TIMEOUT_MS) {
    throw new InvalidLockOptionsError(
      'callTimeout',
      callTimeout,
      `an integer number of ms from 1 to ${MAX_CALL_TIMEOUT_MS}`,
    );
  }
  return callTimeout;
}

/** `prefix` (default ''): a short string without control characters. */
function checkPrefix(value: EtcdLockBackendOptions['prefix']): string {
  const prefix = value === undefined ? '' : value;
  if (
    typeof prefix !== 'string' ||
    prefix.length > MAX_PREFIX_LENGTH ||
    /[\u0000-\u001f\u007f]/.test(prefix)
  ) {
    throw new InvalidLockOptionsError(
      'prefix',
      prefix,
      `a string of at most ${MAX_PREFIX_LENGTH} characters without control characters`,
    );
  }
  return prefix;
}
