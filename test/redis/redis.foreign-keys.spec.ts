import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { RedisServer } from '../support/redis-server';

/**
 * With keyPrefix '' on a server other apps share, their keys of the form `{name}` look like lock
 * keys. list() must name only what has a lock's shape (a holder string with a ttl, or sorted sets
 * of live holders) and forceRelease() must not delete another app's key; a foreign `{name}:r` of
 * another type must not fail the listing either.
 */
let servers: RedisServer[] = [];
const clients: Redis[] = [];

function client(port: number): Redis {
  const c = new Redis({ port, host: '127.0.0.1' });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  servers = await Promise.all([RedisServer.start(), RedisServer.start(), RedisServer.start()]);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit()));
  await Promise.all(servers.map((s) => s.destroy()));
});

/** Another app's keys on every server: a string, a hash, a list and a hash at `{cart}:r`. */
async function foreignKeys(): Promise<void> {
  for (const s of servers) {
    const c = client(s.port);
    await c.set('{user}', 'alice');
    await c.hset('{profile}', 'name', 'bob');
    await c.rpush('{jobs}', 'x');
    await c.hset('{cart}:r', 'item', '2');
  }
}

async function checkForeignKeysLeftAlone(backend: LockBackend): Promise<void> {
  const engine = new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 30_000 } });
  try {
    const held = await engine.acquire('job:1');
    expect((await engine.operator.list('')).sort()).toEqual(['job:1']);
    for (const key of ['user', 'profile', 'jobs', 'cart'])
      expect(await engine.operator.forceRelease(key)).toBe(false);
    for (const s of servers.slice(0, 1)) {
      const c = client(s.port);
      expect(await c.get('{user}')).toBe('alice');
      expect(await c.hget('{profile}', 'name')).toBe('bob');
      expect(await c.llen('{jobs}')).toBe(1);
      expect(await c.hget('{cart}:r', 'item')).toBe('2');
    }
    await held.release();
  } finally {
    await engine.close();
  }
}

describe("keyPrefix '' beside another app's {name} keys", () => {
  beforeAll(foreignKeys);

  it('Redis: list() names only locks, forceRelease() deletes no foreign key', () =>
    checkForeignKeysLeftAlone(new RedisLockBackend({ client: client(servers[0].port) })));

  it('Redlock: list() names only locks, forceRelease() deletes no foreign key', () =>
    checkForeignKeysLeftAlone(new RedlockBackend({ clients: servers.map((s) => client(s.port)) })));
});
