import { randomBytes } from 'node:crypto';
import type { Etcd3 } from 'etcd3';
import type Redis from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { sleep } from './bench.stats';
import { BENCH_TTL_MS, BENCH_WAIT_MS, redisClient, type Contender } from './bench.contenders';

/**
 * The libraries users would pick instead, each with its documented defaults, against the same
 * private servers as ours:
 * - raw ioredis: SET NX PX + an owner-checked Lua DEL: the two-round-trip floor of a safe lock;
 * - redlock 4.2 (retryCount 10, retryDelay 200 ms, retryJitter 100 ms; gives up after ~2 s);
 * - redis-semaphore 5.8 Mutex (polls SET NX every 10 ms for up to 10 s; refresh timer per lock);
 * - etcd3's own client.lock() (a lease + a create-if-absent txn; it never waits: we retry every 10 ms).
 */
// redlock 4 ships no types; this is the part we call.
interface RedlockLike {
  lock(resource: string, ttl: number): Promise<{ unlock(): Promise<void> }>;
}
type RedlockCtor = new (clients: Redis[], options?: object) => RedlockLike;

const RELEASE_LUA =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/** raw ioredis, the floor: one SET NX PX to take, one owner-checked script (EVALSHA) to give back. */
export const rawIoredis: Contender = {
  name: 'raw ioredis SET NX PX + Lua',
  system: 'redis',
  ours: false,
  waits: 'none (try once; retried every 10 ms when busy)',
  async connect(servers) {
    await servers.need('redis');
    const client = redisClient(servers.redis!.port) as Redis & {
      rawRelease(key: string, owner: string): Promise<number>;
    };
    client.defineCommand('rawRelease', { numberOfKeys: 1, lua: RELEASE_LUA });
    return {
      async lock(key) {
        const k = `raw:${key}`;
        const owner = randomBytes(16).toString('hex');
        const until = performance.now() + BENCH_WAIT_MS;
        while ((await client.set(k, owner, 'PX', BENCH_TTL_MS, 'NX')) !== 'OK') {
          if (performance.now() > until) throw new Error(`raw: ${key} still busy`);
          await sleep(10);
        }
        return async () => void (await client.rawRelease(k, owner));
      },
      async close() {
        client.disconnect();
      },
    };
  },
};

function redlockContender(system: 'redis' | 'redlock'): Contender {
  return {
    name: system === 'redis' ? 'redlock 4.2 (1 server)' : 'redlock 4.2 (3 servers)',
    system,
    ours: false,
    waits: 'retries every 200±100 ms, gives up after 10 retries',
    async connect(servers) {
      await servers.need(system);
      const Redlock = require('redlock') as RedlockCtor;
      const clients =
        system === 'redis'
          ? [redisClient(servers.redis!.port)]
          : servers.redlock!.map((s) => redisClient(s.port));
      const redlock = new Redlock(clients);
      return {
        async lock(key) {
          const lock = await redlock.lock(`redlock:${key}`, BENCH_TTL_MS);
          return () => lock.unlock();
        },
        async close() {
          clients.forEach((c) => c.disconnect());
        },
      };
    },
  };
}

export const redlockSingle = redlockContender('redis');
export const redlockTriple = redlockContender('redlock');

export const redisSemaphore: Contender = {
  name: 'redis-semaphore 5.8 Mutex',
  system: 'redis',
  ours: false,
  waits: 'polls every 10 ms for up to 10 s',
  async connect(servers) {
    await servers.need('redis');
    const client = redisClient(servers.redis!.port);
    return {
      async lock(key) {
        // Defaults: lockTimeout 10 s (= BENCH_TTL_MS), acquireTimeout 10 s, retryInterval 10 ms.
        const mutex = new Mutex(client, `sem:${key}`);
        await mutex.acquire();
        return () => mutex.release();
      },
      async close() {
        client.disconnect();
      },
    };
  },
};

export const etcd3Lock: Contender = {
  name: 'etcd3 client.lock()',
  system: 'etcd',
  ours: false,
  waits: 'none (fails when busy; retried every 10 ms)',
  async connect(servers) {
    await servers.need('etcd');
    const { Etcd3: Client } = await import('etcd3');
    const client: Etcd3 = new Client({ hosts: servers.etcd!.hosts() });
    return {
      async lock(key) {
        const until = performance.now() + BENCH_WAIT_MS;
        for (;;) {
          const lock = client.lock(`etcd3lock/${key}`).ttl(BENCH_TTL_MS / 1000);
          try {
            await lock.acquire();
            return () => lock.release();
          } catch (error) {
            if ((error as Error).name !== 'EtcdLockFailedError' || performance.now() > until)
              throw error;
            await sleep(10);
          }
        }
      },
      async close() {
        client.close();
      },
    };
  },
};
