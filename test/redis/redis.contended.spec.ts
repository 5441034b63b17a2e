import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { lockKeys } from '../../lib/backends/redis-client';
import type { LockEvent } from '../../lib/core/activity/lock-events';
import { LockEngine } from '../../lib/core/lock-engine';
import { eventually } from '../support/eventually';
import { RedisServer } from '../support/redis-server';

/**
 * `contended` means "the first attempt did not grant". On Redis a wait is one native queued wait
 * (one attempt as the engine counts them), so the backend has to say that it waited.
 */
let server: RedisServer;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server.destroy();
});

function engine(): LockEngine {
  const client = new Redis({ port: server.port, host: '127.0.0.1' });
  clients.push(client);
  return new LockEngine({ backend: new RedisLockBackend({ client }), keyPrefix: 'cont:' });
}

describe('Redis acquired events', () => {
  it('report contended=true for a grant that waited for another process, false for a free key', async () => {
    const holder = engine();
    const waiter = engine();
    const seen: LockEvent[] = [];
    const stop = waiter.events.on((e) => void seen.push(e));
    try {
      const held = await holder.acquire('k', { ttl: 30_000 });
      const waiting = waiter.acquire('k', { ttl: 30_000, wait: 30_000 });
      // Queued on the server: the waiter's first attempt was answered busy.
      const admin = clients[0];
      await eventually(async () => (await admin.exists(lockKeys('cont:k').queue)) === 1);
      await held.release();
      const granted = await waiting;
      await granted.release();
      const free = await waiter.acquire('free', { wait: 30_000 });
      await free.release();

      const acquired = seen.filter((e) => e.type === 'acquired');
      expect(acquired).toHaveLength(2);
      expect(acquired[0]).toMatchObject({ key: 'k', contended: true, reentrant: false });
      expect(acquired[1]).toMatchObject({ key: 'free', contended: false });
    } finally {
      stop();
      await holder.close();
      await waiter.close();
    }
  });
});
