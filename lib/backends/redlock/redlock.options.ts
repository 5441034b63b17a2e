import {
  checkBoolean,
  checkDuration,
  checkNumber,
  checkOptionsObject,
  checkString,
  minimumTtl,
} from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { checkRedisClient } from '../redis-client';
import type { RedlockClientLike } from './redlock.quorum';

export { minimumTtl };

export interface RedlockBackendOptions {
  /**
   * At least 3 ioredis `Redis` clients, each connected to a different, independent master (no
   * replication between them; 5 is typical). You keep owning them.
   */
  clients?: readonly RedlockClientLike[];
  /**
   * Instead of `clients`: makes the clients on first use; the backend owns them and QUITs them in
   * close(). The same checks as for `clients` apply to what it returns.
   */
  clientFactory?: () => readonly RedlockClientLike[] | Promise<readonly RedlockClientLike[]>;
  /** Clock drift allowed per ms of ttl, from 0 to 0.1. Default 0.01 (the Redlock paper's value). */
  driftFactor?: number;
  /** Fixed clock-drift margin in ms added to ttl x driftFactor. Default 2. */
  driftMargin?: number;
  /**
   * ms one round (acquire, renew, release) waits for silent masters before deciding on the answers
   * it has; never longer than the ttl's validity. Default ttl/10, from 100 to 500 ms.
   */
  timeout?: number;
  /**
   * Retries after the first (and after a split vote) start after a random 0..retryJitter ms, so
   * contenders woken together spread out. Default 25.
   */
  retryJitter?: number;
  /**
   * Pub/sub channel prefix (on every master) for wake-ups. Default
   * 'nestjs-distributed-lock:released'.
   */
  channel?: string;
  /**
   * Wake waiters by pub/sub on every master (default true; one extra connection per master, made on
   * the first wait).
   */
  notifications?: boolean;
  /** ms a key's fence counter lives on each master after its last grant. Default 1 hour. */
  fenceRetention?: number;
}

export interface ResolvedRedlockOptions {
  readonly clients: readonly RedlockClientLike[] | undefined;
  readonly clientFactory: RedlockBackendOptions['clientFactory'];
  readonly driftFactor: number;
  readonly driftMargin: number;
  readonly timeout: number | undefined;
  readonly retryJitter: number;
  readonly channel: string;
  readonly notifications: boolean;
  readonly fenceRetention: number;
}

export const MIN_MASTERS = 3;
const KNOWN = [
  'clients',
  'clientFactory',
  'driftFactor',
  'driftMargin',
  'timeout',
  'retryJitter',
  'channel',
  'notifications',
  'fenceRetention',
];

/** Validates every option once, at construction; each failure names the option. */
export function resolveRedlockOptions(options: RedlockBackendOptions): ResolvedRedlockOptions {
  const o = checkOptionsObject<RedlockBackendOptions>(
    'RedlockBackend options',
    options,
    KNOWN,
    '{ clients: [redis1, redis2, redis3, ...] } or { clientFactory }',
  );
  if (o.clientFactory !== undefined) {
    if (typeof o.clientFactory !== 'function') {
      throw new InvalidLockOptionsError(
        'clientFactory',
        o.clientFactory,
        'a function returning an array of ioredis clients (or a Promise of one)',
      );
    }
    if (o.clients !== undefined)
      throw new InvalidLockOptionsError('clients', o.clients, 'absent when clientFactory is given');
  }
  const clients =
    o.clientFactory === undefined ? checkRedlockClients('clients', o.clients) : undefined;
  return {
    clients,
    clientFactory: o.clientFactory,
    driftFactor: checkNumber(
      'driftFactor',
      o.driftFactor ?? 0.01,
      0,
      0.1,
      ' (clock drift per ms of ttl; 0.01 is usual)',
    ),
    driftMargin: o.driftMargin === undefined ? 2 : checkDuration('driftMargin', o.driftMargin, 0),
    timeout: o.timeout === undefined ? undefined : checkDuration('timeout', o.timeout, 1),
    retryJitter: o.retryJitter === undefined ? 25 : checkDuration('retryJitter', o.retryJitter, 0),
    channel: checkString('channel', o.channel, 'nestjs-distributed-lock:released'),
    notifications: checkBoolean('notifications', o.notifications, true),
    fenceRetention:
      o.fenceRetention === undefined
        ? 3_600_000
        : checkDuration('fenceRetention', o.fenceRetention, 1_000),
  };
}

/**
 * Checks a set of masters: at least 3 distinct standalone clients of distinct servers (by address).
 */
export function checkRedlockClients(
  option: string,
  clients: unknown,
): readonly RedlockClientLike[] {
  if (!Array.isArray(clients) || clients.length < MIN_MASTERS) {
    throw new InvalidLockOptionsError(
      option,
      clients,
      `an array of at least ${MIN_MASTERS} ioredis clients, each connected to a different independent master (5 is typical)`,
    );
  }
  const seen = new Map<RedlockClientLike, number>();
  const addresses = new Map<string, number>();
  clients.forEach((client: RedlockClientLike, i: number) => {
    checkRedisClient(`${option}[${i}]`, client, 'an ioredis Redis client');
    if (client.isCluster)
      throw new InvalidLockOptionsError(
        `${option}[${i}]`,
        client,
        'a standalone ioredis Redis client (a Cluster is one system, not an independent master)',
      );
    const first = seen.get(client);
    if (first !== undefined)
      throw new InvalidLockOptionsError(
        `${option}[${i}]`,
        client,
        `a client different from ${option}[${first}] (the same client twice would count one master twice toward the majority)`,
      );
    seen.set(client, i);
    const address = addressOf(client);
    const other = address === undefined ? undefined : addresses.get(address);
    if (other !== undefined) {
      throw new InvalidLockOptionsError(
        `${option}[${i}]`,
        address,
        `a connection to a server other than ${option}[${other}] (${address} twice would count one master twice toward the majority)`,
      );
    }
    if (address !== undefined) addresses.set(address, i);
  });
  return [...clients];
}

/**
 * `host:port` (or the socket path) a client was configured with, when it says; undefined for
 * Sentinel-managed clients.
 */
function addressOf(client: RedlockClientLike): string | undefined {
  const o = client.options;
  if (!o || o.sentinels) return undefined;
  if (typeof o.path === 'string' && o.path) return `unix:${o.path}`;
  if (o.port === undefined) return undefined;
  const host =
    !o.host || o.host === 'localhost' || o.host === '::ffff:127.0.0.1' ? '127.0.0.1' : o.host;
  return `${host}:${o.port}`;
}

/** Parses `run_id:` out of an INFO server reply. */
export function runIdOf(info: string): string | undefined {
  return /^run_id:([0-9a-f]+)\s*$/m.exec(info)?.[1];
}
