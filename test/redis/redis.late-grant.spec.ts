import type Redis from 'ioredis';
import { RELEASE } from '../../lib/backends/redis/redis.scripts';
import { semaphoreKeys } from '../../lib/backends/redis/redis.semaphore-scripts';
import { eventually } from '../support/eventually';
import { redisProcesses } from './redis-fixture';

/**
 * A waiter that gave up while its leave did not reach the server in time stays queued there; a
 * grant the server hands it later is given back when its message arrives, so the next waiter is
 * served at once. A semaphore permit handed to such a waiter was given back as a lock (the
 * backend's lock release, which found no lock of that owner), and the permit stayed held until its
 * ttl.
 */
const PREFIX = 'late:';
const redis = redisProcesses(PREFIX);

/** Makes the client's next RELEASE script fail after `ms`, without reaching the server. */
function loseNextRelease(client: Redis, ms: number): void {
  const original = client.evalsha.bind(client);
  const spy = jest.spyOn(client, 'evalsha').mockImplementation(((sha: string, ...rest: never[]) => {
    if (sha !== RELEASE.sha)
      return (original as (...a: unknown[]) => Promise<unknown>)(sha, ...rest);
    spy.mockRestore();
    return new Promise((_, reject) => setTimeout(() => reject(new Error('lost leave')), ms));
  }) as never);
}

describe('Redis late grants to a waiter that gave up', () => {
  it('a semaphore permit handed to a waiter whose leave was lost is given back, and the next waiter is served', async () => {
    const [a, b, c] = [redis.processLike(), redis.processLike(), redis.processLike()];
    const queue = semaphoreKeys(PREFIX + 'permit').queue;
    const holder = await a.engine.acquire('permit', { permits: 1 });
    const controller = new AbortController();
    const giving = b.engine.acquire('permit', { permits: 1, signal: controller.signal });
    await eventually(async () => (await redis.admin.zcard(queue)) === 1);
    loseNextRelease(b.client, 500);
    controller.abort(new Error('no longer needed'));
    await expect(giving).rejects.toThrow('no longer needed');
    // The leave never reached the server: b is still queued there.
    expect(await redis.admin.zcard(queue)).toBe(1);
    const next = c.engine.acquire('permit', { permits: 1, wait: 5_000 });
    await eventually(async () => (await redis.admin.zcard(queue)) === 2);
    // The release hands the permit to b (the queue's head); b gives it back, which serves c.
    await holder.release();
    const handle = await next;
    expect(handle.fencingToken > holder.fencingToken).toBe(true);
    await handle.release();
  });

  it('a lock handed to a waiter whose leave was lost is given back, and the next waiter is served', async () => {
    const [a, b, c] = [redis.processLike(), redis.processLike(), redis.processLike()];
    const holder = await a.engine.acquire('lock');
    const controller = new AbortController();
    const giving = b.engine.acquire('lock', { signal: controller.signal });
    const queue = `{${PREFIX}lock}:q`;
    await eventually(async () => (await redis.admin.zcard(queue)) === 1);
    loseNextRelease(b.client, 500);
    controller.abort(new Error('no longer needed'));
    await expect(giving).rejects.toThrow('no longer needed');
    expect(await redis.admin.zcard(queue)).toBe(1);
    const next = c.engine.acquire('lock', { wait: 5_000 });
    await eventually(async () => (await redis.admin.zcard(queue)) === 2);
    await holder.release();
    const handle = await next;
    expect(handle.fencingToken > holder.fencingToken).toBe(true);
    await handle.release();
  });
});
