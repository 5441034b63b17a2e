import {
  checkDuration,
  checkInteger,
  checkOptionsObject,
  checkString,
  checkBoolean,
} from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { checkRedisClient, RedisClientSource, type RedisClientLike } from '../redis-client';

export interface RedisLockBackendOptions {
  /** An ioredis Redis (standalone or Sentinel-managed) or Cluster client; you keep owning it. */
  client?: RedisClientLike;
  /**
   * Instead of `client`: makes the client on first use; the backend owns it and QUITs it in
   * close(), so `app.close()` leaves nothing open.
   */
  clientFactory?: () => RedisClientLike | Promise<RedisClientLike>;
  /** Pub/sub channel prefix for wake-ups. Default 'nestjs-distributed-lock:released'. */
  channel?: string;
  /**
   * Wake waiters by pub/sub (default true; one extra connection per backend, made on the first
   * wait). false = poll only.
   */
  notifications?: boolean;
  /** ms a key's fence counter lives after its last grant. Default 1 hour; see redis.scripts.ts. */
  fenceRetention?: number;
  /**
   * After each grant, WAIT until `count` replicas acknowledge (at most `timeout` ms); fewer acks
   * release the grant and fail the acquire with LockBackendUnavailableError ("only N of M replicas
   * acknowledged"). On Cluster each script goes in one pipeline with its WAIT: on the node that
   * took the write.
   */
  replicas?: { count: number; timeout: number };
}

export interface ResolvedRedisOptions {
  readonly source: RedisClientSource;
  readonly channel: string;
  readonly notifications: boolean;
  readonly fenceRetention: number;
  readonly replicas: { readonly count: number; readonly timeout: number } | undefined;
}

const KNOWN = ['client', 'clientFactory', 'channel', 'notifications', 'fenceRetention', 'replicas'];
export const DEFAULT_CHANNEL = 'nestjs-distributed-lock:released';
export const DEFAULT_FENCE_RETENTION_MS = 3_600_000;
/** Shorter would not outlive a server clock step back of a few seconds (see redis.scripts.ts). */
export const MIN_FENCE_RETENTION_MS = 1_000;

/** Validates every option once, at construction; each failure names the option. */
export function resolveRedisOptions(options: RedisLockBackendOptions): ResolvedRedisOptions {
  const o = checkOptionsObject<RedisLockBackendOptions>(
    'RedisLockBackend options',
    options,
    KNOWN,
    '{ client } or { clientFactory }',
  );
  if ((o.client === undefined) === (o.clientFactory === undefined)) {
    throw new InvalidLockOptionsError(
      'client',
      o.client,
      'exactly one of client (an ioredis Redis or Cluster client you own) or clientFactory',
    );
  }
  if (o.client !== undefined) checkRedisClient('client', o.client);
  if (o.clientFactory !== undefined && typeof o.clientFactory !== 'function') {
    throw new InvalidLockOptionsError(
      'clientFactory',
      o.clientFactory,
      'a function returning an ioredis client (or a Promise of one)',
    );
  }
  let replicas: ResolvedRedisOptions['replicas'];
  if (o.replicas !== undefined) {
    if (o.replicas === null || typeof o.replicas !== 'object') {
      throw new InvalidLockOptionsError('replicas', o.replicas, '{ count, timeout }');
    }
    const count = checkInteger('replicas.count', o.replicas.count, 1, 1_000);
    const timeout = checkDuration('replicas.timeout', o.replicas.timeout, 1);
    if (o.client && !o.client.isCluster && typeof o.client.wait !== 'function') {
      throw new InvalidLockOptionsError(
        'replicas',
        o.replicas,
        'an ioredis Redis (standalone or Sentinel-managed) or Cluster client: one with WAIT',
      );
    }
    replicas = { count, timeout };
  }
  return {
    source: new RedisClientSource(o.client, o.clientFactory),
    channel: checkString('channel', o.channel, DEFAULT_CHANNEL),
    notifications: checkBoolean('notifications', o.notifications, true),
    fenceRetention:
      o.fenceRetention === undefined
        ? DEFAULT_FENCE_RETENTION_MS
        : checkDuration('fenceRetention', o.fenceRetention, MIN_FENCE_RETENTION_MS),
    replicas,
  };
}
