import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import {
  ACQUIRE,
  LOCK_FREE,
  lockKeys,
  RELEASE,
  RELEASE_UNQUEUED,
} from '../../lib/backends/redis/redis.scripts';
import { SEM_PERMIT_FREE, semaphoreKeys } from '../../lib/backends/redis/redis.semaphore-scripts';
import { LockEngine } from '../../lib/core/lock-engine';
import { RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';

/**
 * The uncontended path and the fence's footprint, read from a real redis-server: which commands an
 * uncontended acquire + release run (INFO commandstats counts commands run inside scripts too),
 * and that a short fenceRetention keeps tokens strictly growing after the fence key expired.
 */
let server: RedisServer;
let admin: Redis;
let client: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = new Redis({ port: server.port, host: '127.0.0.1' });
  client = new Redis({ port: server.port, host: '127.0.0.1' });
});

afterAll(async () => {
  admin.disconnect();
  client.disconnect();
  await server.destroy();
});

async function commandCalls(): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const m of info.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) calls[m[1]] = Number(m[2]);
  for (const name of Object.keys(calls))
    if (name === 'info' || name.startsWith('config')) delete calls[name];
  return calls;
}

describe('RedisLockBackend lean path and fence retention', () => {
  it('uncontended: acquire = EXISTS + SET NX PX + the fence (GET + TIME + SET) + the holder (SET), release = GET + DEL + EXISTS; no PUBLISH', async () => {
    const engine = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: 'lean:',
    });
    await (await engine.acquire('warm')).release(); // caches the scripts, creates no fence for 'k*'
    await (await engine.acquire('k0')).release(); // the fence of k0 is new here (TIME once)
    await admin.config('RESETSTAT');
    const evalsha = jest.spyOn(client, 'evalsha');
    for (let i = 0; i < 20; i++) await (await engine.acquire('k0')).release();
    // The short scripts: LOCK_FREE with 5 keys (not ACQUIRE's 7 keys and 9 arguments) and
    // RELEASE_UNQUEUED with 2 (not RELEASE's 6 and 5), taking turns.
    expect(evalsha.mock.calls.map((c) => `${c[0]}/${c[1]}`)).toEqual(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0 ? `${LOCK_FREE.sha}/5` : `${RELEASE_UNQUEUED.sha}/2`,
      ),
    );
    evalsha.mockRestore();
    // The fence reads the clock at every grant (max(last + 1, server µs): tokens never repeat
    // after a failover to a replica that missed the last grants). The holder's identity is one
    // more SET ({K}:h) in the same script; the release leaves it (it names an old owner).
    expect(await commandCalls()).toEqual({
      evalsha: 40,
      exists: 40,
      set: 60,
      get: 40,
      time: 20,
      del: 20,
    });
    await engine.close();
  });

  it('short scripts step aside: a busy key goes to ACQUIRE (and queues), a release that finds a waiter goes to RELEASE (and hands over)', async () => {
    const engine = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: 'lean:',
    });
    const holder = await engine.acquire('handover');
    const evalsha = jest.spyOn(client, 'evalsha');
    // LOCK_FREE answers nil (held), then ACQUIRE queues the waiter: two scripts, in that order.
    const waiter = engine.acquire('handover', { wait: 10_000 });
    const keys = lockKeys('lean:handover');
    await eventually(async () => (await admin.zcard(keys.queue)) === 1, 5_000, 10);
    expect(evalsha.mock.calls.map((c) => c[0])).toEqual([LOCK_FREE.sha, ACQUIRE.sha]);
    evalsha.mockClear();
    // RELEASE_UNQUEUED finds the waiter (-1, nothing changed), RELEASE hands the lock over, and
    // the waiter, woken by the message, confirms its grant with ACQUIRE (the token is the server's).
    await holder.release();
    const next = await waiter;
    expect(evalsha.mock.calls.map((c) => c[0])).toEqual([
      RELEASE_UNQUEUED.sha,
      RELEASE.sha,
      ACQUIRE.sha,
    ]);
    expect(await admin.get(keys.writer)).toBe(next.owner);
    expect(next.fencingToken).toBeGreaterThan(holder.fencingToken);
    evalsha.mockClear();
    // Marked: within the next second both go straight to the full scripts.
    await next.release();
    expect(evalsha.mock.calls.map((c) => c[0])).toEqual([RELEASE.sha]);
    evalsha.mockRestore();
    expect(await admin.exists(keys.writer)).toBe(0);
    await engine.close();
  });

  it('fenceRetention: the fence key lives that long after the last grant, and tokens still grow after it expired', async () => {
    const engine = new LockEngine({
      backend: new RedisLockBackend({ client, fenceRetention: 1_000 }),
      keyPrefix: 'lean:',
    });
    const fenceKey = lockKeys('lean:short').fence;
    const first = await engine.acquire('short');
    await first.release();
    const pttl = await admin.pttl(fenceKey);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(1_000);
    const bytes = await admin.memory('USAGE', fenceKey);
    process.stdout.write(
      `[redis fence] MEMORY USAGE of ${fenceKey} (${fenceKey.length} chars): ${bytes} bytes\n`,
    );
    const second = await engine.acquire('short');
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await second.release();
    await eventually(async () => (await admin.exists(fenceKey)) === 0, 5_000, 50);
    const third = await engine.acquire('short');
    expect(third.fencingToken > second.fencingToken).toBe(true);
    await third.release();
    await engine.close();
  });

  it('uncontended acquire never reads the request signal (the engine makes its AbortController only on a read)', async () => {
    const backend = new RedisLockBackend({ client });
    const controller = new AbortController();
    let reads = 0;
    const request = {
      key: 'lean:signal',
      owner: 'signal-owner',
      mode: 'exclusive' as const,
      ttl: 10_000,
      wait: 5_000,
      onLost: () => undefined,
      get signal() {
        reads++;
        return controller.signal;
      },
    };
    const granted = await backend.tryAcquire(request);
    expect(granted.acquired).toBe(true);
    expect(reads).toBe(0);
    // A waiter's attempt reads none either: it queues and answers busy with its wake (the engine
    // waits on that, with the signal), and leaving takes it out of the queue.
    // Not a spread: that would read the signal getter.
    const other = Object.create(request, { owner: { value: 'other' } }) as typeof request;
    const busy = await backend.tryAcquire(other);
    expect(busy.acquired).toBe(false);
    expect(!busy.acquired && busy.wake).toBeTruthy();
    expect(reads).toBe(0);
    expect((await backend.inspect('lean:signal')).waiters).toBe(1);
    await backend.leave(other);
    expect((await backend.inspect('lean:signal')).waiters).toBe(0);
    await backend.release(request);
    await backend.close();
  });

  it('uncontended semaphore (permits 3): acquire = one short script (EXISTS + ZADD + PEXPIRE + the fence), release = one plain ZREM (no script)', async () => {
    const engine = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: 'lean:',
    });
    await (await engine.acquire('sem-warm', { permits: 3 })).release(); // scripts, subscription
    await (await engine.acquire('sem', { permits: 3 })).release(); // the fence of sem is new here
    await admin.config('RESETSTAT');
    const evalsha = jest.spyOn(client, 'evalsha');
    for (let i = 0; i < 20; i++) await (await engine.acquire('sem', { permits: 3 })).release();
    // Every acquire ran the short script (SEM_PERMIT_FREE: 3 keys and 3 arguments, not
    // SEM_ACQUIRE's 4 and 8), with 3 keys.
    expect(evalsha.mock.calls.map((c) => `${c[0]}/${c[1]}`)).toEqual(
      Array.from({ length: 20 }, () => `${SEM_PERMIT_FREE.sha}/3`),
    );
    evalsha.mockRestore();
    // No permit and nobody queued: one EXISTS of both keys, no count (ZCARD) or purge
    // (ZREMRANGEBYSCORE) of the set, no PTTL for its expiry: the permit is the set's only one, so
    // the set's expiry is the permit's. The clock (TIME) is read once, by the fence.
    expect(await commandCalls()).toEqual({
      evalsha: 20,
      exists: 20,
      zadd: 20,
      pexpire: 20,
      get: 20,
      time: 20,
      set: 20,
      zrem: 20,
    });
    await engine.close();
  });

  it('semaphore permits: the set outlives its longest permit, and a shorter permit never shortens it', async () => {
    const engine = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: 'lean:',
    });
    const permits = semaphoreKeys('lean:sem-ttl').permits;
    const a = await engine.acquire('sem-ttl', { permits: 3, ttl: 10_000 });
    const b = await engine.acquire('sem-ttl', { permits: 3, ttl: 60_000 });
    expect(await admin.pttl(permits)).toBeGreaterThan(59_000);
    const c = await engine.acquire('sem-ttl', { permits: 3, ttl: 2_000 });
    expect(await admin.pttl(permits)).toBeGreaterThan(59_000);
    const [, bExpiry] = await admin.zrange(permits, '-1', '-1', 'WITHSCORES');
    const serverMs = Number((await admin.time())[0]) * 1000;
    expect(await admin.pttl(permits)).toBeGreaterThanOrEqual(Number(bExpiry) - serverMs - 1_000);
    await Promise.all([a.release(), b.release(), c.release()]);
    expect(await admin.exists(permits)).toBe(0);
    await engine.close();
  });
});
