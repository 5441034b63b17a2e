import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { RedisServer } from '../support/redis-server';

/**
 * `replicas` on a primary that has no replica: a waiting acquire (wait > 0) must fail with the
 * replicas error itself, not keep re-granting and giving back until its wait's budget runs out and
 * then report that budget.
 */
let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  client = new Redis({ port: server.port, host: '127.0.0.1' });
});

afterAll(async () => {
  client.disconnect();
  await server.destroy();
});

it('a waiting acquire with "replicas" unmet fails with "only 0 of 1 replicas acknowledged", and leaves no lock', async () => {
  const engine = new LockEngine({
    backend: new RedisLockBackend({ client, replicas: { count: 1, timeout: 100 } }),
    keyPrefix: 'unmet:',
    operationTimeout: 1_000,
  });
  const error = await engine.acquire('k', { wait: 3_000 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LockBackendUnavailableError);
  expect((error as Error).message).toMatch(
    /only 0 of 1 replicas acknowledged the grant within 100 ms \(option "replicas"\)/,
  );
  expect(await client.exists(lockKeys('unmet:k').writer)).toBe(0);
  await engine.close();
});
