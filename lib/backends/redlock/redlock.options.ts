import { checkDuration } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { RedlockClientLike } from './redlock.quorum';

export interface RedlockBackendOptions {
  /**
   * At least 3 ioredis `Redis` clients, each connected to a different, independent master (no
   * replication between them; 5 is typical). You keep owning them.
   */
  clients: readonly RedlockClientLike[];
  /** Clock drift allowed per ms of ttl, from 0 to 0.1. Default 0.01 (the Redlock paper's value). */
  driftFactor?: number;
  /** Fixed clock-drift margin in ms added to ttl x driftFactor. Default 2. */
  driftMargin?: number;
  /**
   * ms one round (acquire, renew, release) waits for silent masters before deciding on the answers it
   * has; never longer than the ttl's validity. Default ttl/10, from 100 to 500 ms.
   */
  timeout?: number;
  /** Retries after the first (and after a split vote) start after a random 0..retryJitter ms, so contenders woken together spread out. Default 25. */
  retryJitter?: number;
  /** Pub/sub channel (on every master) that announces releases. Default 'nestjs-distributed-lock:released'. */
  channel?: string;
  /** Wake waiters by pub/sub on every master (default true; one extra connection per master). */
  notifications?: boolean;
  /** ms a key's fence counter outlives its last grant on each master. Default 7 days. */
  fenceRetention?: number;
}

export interface ResolvedRedlockOptions {
  readonly clients: readonly RedlockClientLike[];
  readonly driftFactor: number;
  readonly driftMargin: number;
  readonly timeout: number | undefined;
  readonly retryJitter: number;
  readonly channel: string;
  readonly notifications: boolean;
  readonly fenceRetention: number;
}

export const MIN_MASTERS = 3;
const WEEK_MS = 7 * 24 * 3600 * 1000;

/** Validates every option once, at construction; each failure names the option. */
export function resolveRedlockOptions(options: RedlockBackendOptions): ResolvedRedlockOptions {
  if (!options || typeof options !== 'object') throw new InvalidLockOptionsError('RedlockBackend options', options, '{ clients: [redis1, redis2, redis3, ...] }');
  const { clients } = options;
  if (!Array.isArray(clients) || clients.length < MIN_MASTERS) {
    throw new InvalidLockOptionsError('clients', clients, `an array of at least ${MIN_MASTERS} ioredis clients, each connected to a different independent master (5 is typical)`);
  }
  const seen = new Map<RedlockClientLike, number>();
  const addresses = new Map<string, number>();
  clients.forEach((client: RedlockClientLike, i: number) => {
    if (!client || typeof client.evalsha !== 'function' || typeof client.eval !== 'function' || typeof client.pipeline !== 'function' || typeof client.duplicate !== 'function') {
      throw new InvalidLockOptionsError(`clients[${i}]`, client, 'an ioredis Redis client');
    }
    if (client.isCluster) throw new InvalidLockOptionsError(`clients[${i}]`, client, 'a standalone ioredis Redis client (a Cluster is one system, not an independent master)');
    const first = seen.get(client);
    if (first !== undefined) throw new InvalidLockOptionsError(`clients[${i}]`, client, `a client different from clients[${first}] (the same client twice would count one master twice toward the majority)`);
    seen.set(client, i);
    const address = addressOf(client);
    const other = address === undefined ? undefined : addresses.get(address);
    if (other !== undefined) {
      throw new InvalidLockOptionsError(`clients[${i}]`, address, `a connection to a server other than clients[${other}] (${address} twice would count one master twice toward the majority)`);
    }
    if (address !== undefined) addresses.set(address, i);
  });
  const driftFactor = options.driftFactor ?? 0.01;
  if (typeof driftFactor !== 'number' || !Number.isFinite(driftFactor) || driftFactor < 0 || driftFactor > 0.1) {
    throw new InvalidLockOptionsError('driftFactor', driftFactor, 'a number from 0 to 0.1 (clock drift per ms of ttl; 0.01 is usual)');
  }
  const driftMargin = options.driftMargin === undefined ? 2 : checkDuration('driftMargin', options.driftMargin, 0);
  const timeout = options.timeout === undefined ? undefined : checkDuration('timeout', options.timeout, 1);
  const retryJitter = options.retryJitter === undefined ? 25 : checkDuration('retryJitter', options.retryJitter, 0);
  const channel = options.channel ?? 'nestjs-distributed-lock:released';
  if (typeof channel !== 'string' || channel.length === 0) throw new InvalidLockOptionsError('channel', channel, 'a non-empty string');
  if (options.notifications !== undefined && typeof options.notifications !== 'boolean') throw new InvalidLockOptionsError('notifications', options.notifications, 'true or false');
  const fenceRetention = options.fenceRetention === undefined ? WEEK_MS : checkDuration('fenceRetention', options.fenceRetention, 60_000);
  return { clients: [...clients], driftFactor, driftMargin, timeout, retryJitter, channel, notifications: options.notifications !== false, fenceRetention };
}

/** `host:port` (or the socket path) a client was configured with, when it says; undefined for Sentinel-managed clients. */
function addressOf(client: RedlockClientLike): string | undefined {
  const o = client.options;
  if (!o || o.sentinels) return undefined;
  if (typeof o.path === 'string' && o.path) return `unix:${o.path}`;
  if (o.port === undefined) return undefined;
  const host = !o.host || o.host === 'localhost' || o.host === '::ffff:127.0.0.1' ? '127.0.0.1' : o.host;
  return `${host}:${o.port}`;
}

/** The smallest ttl that leaves some validity after the drift allowance. */
export function minimumTtl(driftFactor: number, driftMargin: number): number {
  let ttl = Math.max(1, Math.floor((driftMargin + 1) / (1 - driftFactor)));
  while (ttl - Math.ceil(ttl * driftFactor) - driftMargin <= 0) ttl++;
  return ttl;
}

/** Parses `run_id:` out of an INFO server reply. */
export function runIdOf(info: string): string | undefined {
  return /^run_id:([0-9a-f]+)\s*$/m.exec(info)?.[1];
}
