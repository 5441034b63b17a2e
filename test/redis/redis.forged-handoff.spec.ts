import { semaphoreKeys } from '../../lib/backends/redis/redis.semaphore-scripts';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import type { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { eventually } from '../support/eventually';
import { redisProcesses } from './redis-fixture';

/**
 * A handoff message may wake a waiter, never grant it. Anyone with read access and PUBLISH can
 * read a queued waiter's owner (the queue) and channel (the details hash) and publish
 * "owner|token" on it: the waiter must confirm with the server, and the token it resolves with
 * must be the server's.
 */
const PREFIX = 'forged:';
const redis = redisProcesses(PREFIX);
const FORGED = 999_999_999n;

interface Attempts {
  /** Attempts of the waiter's backend that have settled since `watch`. */
  settled: number;
}

/** Counts the attempts `target[method]` makes from now on, once each settles. */
function watch(target: object, method: string): Attempts {
  const counter = { settled: 0 };
  const t = target as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = t[method].bind(target);
  t[method] = (...args: unknown[]) => {
    const p = original(...args);
    p.then(
      () => counter.settled++,
      () => counter.settled++,
    );
    return p;
  };
  return counter;
}

/** Publishes "owner|FORGED" to the only waiter queued in `queue`, on the channel `details` names. */
async function forge(queue: string, details: string): Promise<void> {
  const [owner] = await redis.admin.zrange(queue, '0', '0');
  const info = await redis.admin.hget(details, owner);
  const channel = (info ?? '').split('|').slice(3).join('|');
  expect(channel).not.toBe('');
  expect(await redis.admin.publish(channel, `${owner}|${FORGED}`)).toBe(1);
}

describe('Redis handoff messages', () => {
  it('a published message is not taken as a Redis lock grant', async () => {
    const [a, b] = [redis.processLike(), redis.processLike()];
    const holder = await a.engine.acquire('k');
    const keys = lockKeys(PREFIX + 'k');
    let resolvedWhileHeld = false;
    const waiting = b.engine.acquire('k').then((h) => {
      if (holder.held) resolvedWhileHeld = true;
      return h;
    });
    await eventually(async () => (await redis.admin.zcard(keys.queue)) === 1);
    const attempts = watch(b.backend, 'tryAcquire');
    await forge(keys.queue, keys.waiters);
    // The waiter either resolves (the bug) or confirms with the server and waits on.
    let done = false;
    void waiting.finally(() => (done = true));
    await eventually(() => done || attempts.settled > 0);
    expect(done).toBe(false);
    expect(holder.held).toBe(true);
    await holder.release();
    const handle = await waiting;
    expect(resolvedWhileHeld).toBe(false);
    expect(handle.fencingToken).not.toBe(FORGED);
    expect(handle.fencingToken > holder.fencingToken).toBe(true);
    expect(BigInt((await redis.admin.get(keys.fence)) ?? '0')).toBe(handle.fencingToken);
    await handle.release();
  });

  it('a published message is not taken as a Redis semaphore grant', async () => {
    const [a, b] = [redis.processLike(), redis.processLike()];
    const holder = await a.engine.acquire('s', { permits: 1 });
    const keys = semaphoreKeys(PREFIX + 's');
    const waiting = b.engine.acquire('s', { permits: 1 });
    await eventually(async () => (await redis.admin.zcard(keys.queue)) === 1);
    const sem = (b.backend as RedisLockBackend).semaphore;
    const attempts = watch(sem, 'fullAttempt');
    await forge(keys.queue, keys.details);
    let done = false;
    void waiting.finally(() => (done = true));
    await eventually(() => done || attempts.settled > 0);
    expect(done).toBe(false);
    expect(holder.held).toBe(true);
    await holder.release();
    const handle = await waiting;
    expect(handle.fencingToken).not.toBe(FORGED);
    expect(handle.fencingToken > holder.fencingToken).toBe(true);
    await handle.release();
  });
});
