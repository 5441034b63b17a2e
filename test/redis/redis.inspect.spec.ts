import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from '../conformance/conformance-tools';
import { RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';

/** inspect(key) and forceRelease(key) on a real redis-server (LockInspection contract). */
let server: RedisServer;
const clients: Redis[] = [];

function backend(): RedisLockBackend {
  const client = new Redis({ port: server.port, host: '127.0.0.1' });
  clients.push(client);
  return new RedisLockBackend({ client });
}

beforeAll(async () => {
  server = await RedisServer.start();
});

afterAll(async () => {
  clients.forEach((c) => c.disconnect());
  await server.destroy();
});

describe('RedisLockBackend inspect and forceRelease', () => {
  it('reports a free key, an exclusive holder with its queue, and shared holders', async () => {
    const ops = backend();
    const a = new LockEngine({ backend: backend(), keyPrefix: 'i:', defaults: { ttl: 5_000 } });
    const b = new LockEngine({ backend: backend(), keyPrefix: 'i:', defaults: { ttl: 5_000 } });
    expect(await ops.inspect('i:free')).toEqual({
      key: 'i:free',
      held: false,
      mode: undefined,
      holders: [],
      fencingToken: undefined,
      waiters: 0,
    });

    const held = await a.acquire('x');
    const waiting = b.acquire('x', { wait: 10_000 });
    await eventually(async () => (await ops.inspect('i:x')).waiters === 1);
    const seen = await ops.inspect('i:x');
    expect(seen).toMatchObject({
      key: 'i:x',
      held: true,
      mode: 'exclusive',
      fencingToken: held.fencingToken,
      waiters: 1,
    });
    expect(seen.holders).toHaveLength(1);
    expect(seen.holders[0].mode).toBe('exclusive');
    expect(seen.holders[0].remainingTtl).toBeGreaterThan(0);
    expect(seen.holders[0].remainingTtl).toBeLessThanOrEqual(5_000);
    await held.release();
    await (await waiting).release();

    const r1 = await a.acquire('s', { mode: 'shared' });
    const r2 = await b.acquire('s', { mode: 'shared' });
    const shared = await ops.inspect('i:s');
    expect(shared).toMatchObject({ held: true, mode: 'shared', waiters: 0 });
    expect(shared.holders.map((h) => h.mode)).toEqual(['shared', 'shared']);
    expect(shared.fencingToken).toBe(r2.fencingToken);
    await r1.release();
    await r2.release();
    await a.close();
    await b.close();
    await ops.close();
  });

  it('forceRelease frees the key, serves the next waiter, and the old holder learns of the loss', async () => {
    const ops = backend();
    const a = new LockEngine({ backend: backend(), keyPrefix: 'i:', defaults: { ttl: 600 } });
    const b = new LockEngine({ backend: backend(), keyPrefix: 'i:', defaults: { ttl: 600 } });
    const held = await a.acquire('stuck');
    const next = b.acquire('stuck', { wait: 10_000 });
    await eventually(async () => (await ops.inspect('i:stuck')).waiters === 1);
    expect(await ops.forceRelease('i:stuck')).toBe(true);
    const taken = await next;
    expect(taken.fencingToken > held.fencingToken).toBe(true);
    expect(await untilAborted(held.signal, 5_000)).toBeInstanceOf(LockLostError);
    await taken.release();
    expect(await ops.forceRelease('i:stuck')).toBe(false);
    await a.close();
    await b.close();
    await ops.close();
  });
});
