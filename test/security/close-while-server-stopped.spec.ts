import Redis from 'ioredis';
import { Pool } from 'pg';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { PostgresServer } from '../support/postgres-server';
import { RedisServer } from '../support/redis-server';
import type { ServerProcess } from '../support/server-process';

/**
 * close() hangs while a server is unresponsive: SIGSTOP the server a backend owns its client on,
 * then close. Every close() must settle within a bounded time (operationTimeout plus a little per
 * step) whatever the server does; here the test's own timeout is the bound (a hang fails it).
 * Each backend holds a lock when its server stops, so close() also has a release to give up on.
 */
// Long enough for a fresh pool's first connection and table check on a loaded machine (the
// acquire before the stop is set-up, not the point); each close step is still bounded by it.
const OPERATION_TIMEOUT = 2_000;
const BOUND = 15_000;

const redisClient = (port: number) => {
  const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  c.on('error', () => undefined);
  return c;
};

async function closeWhileStopped(servers: ServerProcess[], backend: LockBackend): Promise<void> {
  const engine = new LockEngine({
    backend,
    operationTimeout: OPERATION_TIMEOUT,
    defaults: { ttl: 10_000, wait: 0 },
  });
  const held = await engine.acquire('close-me').catch(async (error: unknown) => {
    await engine.close(); // the server runs: nothing is left open behind a failed set-up
    throw error;
  });
  expect(held.held).toBe(true);
  servers.forEach((s) => s.pause());
  try {
    await engine.close();
    expect(held.held).toBe(false);
  } finally {
    servers.forEach((s) => s.resume());
  }
}

describe('close() while the server is stopped (SIGSTOP)', () => {
  let redis: RedisServer[] = [];
  let postgres: PostgresServer | undefined;

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([
      Promise.all([RedisServer.start(), RedisServer.start(), RedisServer.start()]),
      PostgresServer.start(),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...redis.map((s) => s.destroy()), postgres?.destroy()]);
  });

  it(
    'Redis: close() settles while its owned client cannot QUIT',
    () =>
      closeWhileStopped(
        [redis[0]],
        new RedisLockBackend({ clientFactory: () => redisClient(redis[0].port) }),
      ),
    BOUND,
  );

  it(
    'Redlock: close() settles while every master is stopped',
    () =>
      closeWhileStopped(
        redis,
        new RedlockBackend({ clientFactory: () => redis.map((s) => redisClient(s.port)) }),
      ),
    BOUND,
  );

  it(
    'PostgreSQL: close() settles while its owned pool cannot end',
    () => {
      const server = postgres as PostgresServer;
      return closeWhileStopped(
        [server],
        new PostgresLockBackend({
          clientFactory: () => {
            const pool = new Pool({ ...server.connection, max: 2, connectionTimeoutMillis: 1_000 });
            pool.on('error', () => undefined);
            return pool;
          },
        }),
      );
    },
    BOUND,
  );
});
