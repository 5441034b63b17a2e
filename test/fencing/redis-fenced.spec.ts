import Redis, { Cluster } from 'ioredis';
import { join } from 'node:path';
import { LockEngine, RedisLockBackend } from '../../lib';
import {
  fencedValue,
  fencingEvents,
  RedisFencedStore,
  StaleFencingTokenError,
  type StaleFencingEvent,
} from '../../lib/fencing';
import { HolderProcess } from '../support/holder-harness';
import { RedisClusterServers, RedisServer } from '../support/redis-server';

const HOLDER = join(__dirname, 'fenced-holder.process.ts');

describe('RedisFencedStore (a private redis-server)', () => {
  let server: RedisServer;
  let client: Redis;
  let store: RedisFencedStore;
  const holders: HolderProcess[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis({ host: '127.0.0.1', port: server.port });
    store = new RedisFencedStore({ client });
  });
  afterAll(async () => {
    await Promise.all(holders.map((h) => h.kill()));
    client.disconnect();
    await server.destroy();
  });

  it('set, hset, incrby and del write with a current token and refuse an older one, typed', async () => {
    expect(await store.set('acct:a', 5n, 'five')).toMatchObject({ accepted: true, value: 'OK' });
    expect(await store.set('acct:a', 5n, 'five again')).toMatchObject({ accepted: true });
    const stale = await store.set('acct:a', 4n, 'four');
    expect(stale).toMatchObject({ accepted: false, token: 4n, highest: 5n });
    expect(!stale.accepted && stale.error).toBeInstanceOf(StaleFencingTokenError);
    expect(await client.get('acct:a')).toBe('five again');

    expect(fencedValue(await store.hset('acct:h', 7n, { a: 1, b: 'x' }))).toBe(2);
    expect((await store.hset('acct:h', 6n, { a: 2 })).accepted).toBe(false);
    expect(await client.hget('acct:h', 'a')).toBe('1');

    expect(fencedValue(await store.incrby('acct:n', 3n, 10))).toBe(10);
    expect(fencedValue(await store.incrby('acct:n', 9n, 1))).toBe(11);
    await expect(store.incrby('acct:n', 8n, 1).then(fencedValue)).rejects.toMatchObject({
      code: 'STALE_FENCING_TOKEN',
      resource: 'acct:n',
      token: 8n,
      highest: 9n,
    });

    expect(fencedValue(await store.del('acct:n', 9n))).toBe(1);
    // The fence outlives the key: a stale holder cannot recreate what a newer one deleted.
    expect((await store.set('acct:n', 8n, 'zombie')).accepted).toBe(false);
    expect(await client.exists('acct:n')).toBe(0);
    expect(await store.highest('acct:n')).toBe(9n);
  });

  it('set with px sets the expiry; a token past 2^53 compares exactly', async () => {
    expect((await store.set('acct:px', 1n, 'v', { px: 60_000 })).accepted).toBe(true);
    expect(await client.pttl('acct:px')).toBeGreaterThan(0);
    const big = 2n ** 60n;
    expect((await store.set('acct:big', big + 1n, 'x')).accepted).toBe(true);
    // As doubles, 2^60 and 2^60 + 1 are equal: an exact compare must still refuse the lower.
    expect(await store.set('acct:big', big, 'y')).toMatchObject({
      accepted: false,
      highest: big + 1n,
    });
  });

  it('runs a user script only when the token is current, with its own KEYS and ARGV', async () => {
    const move = store.script(`
      local from = tonumber(redis.call('GET', KEYS[1]) or '0')
      redis.call('SET', KEYS[1], from - tonumber(ARGV[1]))
      return redis.call('INCRBY', KEYS[2], ARGV[1])`);
    await client.set('{acct}:from', '100');
    expect(await store.run(move, 3n, ['{acct}:from', '{acct}:to'], [30])).toMatchObject({
      accepted: true,
      value: 30,
    });
    expect(await store.run(move, 2n, ['{acct}:from', '{acct}:to'], [30])).toMatchObject({
      accepted: false,
      highest: 3n,
    });
    expect(await client.mget('{acct}:from', '{acct}:to')).toEqual(['70', '30']);
    // After SCRIPT FLUSH the store sends the body again (EVALSHA -> NOSCRIPT -> EVAL).
    await client.script('FLUSH');
    expect((await store.run(move, 3n, ['{acct}:from', '{acct}:to'], [1])).accepted).toBe(true);
  });

  it('tokens of two keys never interfere: each resource has its own fence', async () => {
    // Lock A's token is ahead of lock B's; writes to A's and B's resources both stand.
    const engine = new LockEngine({ backend: new RedisLockBackend({ client }), keyPrefix: 'two:' });
    try {
      // Tokens only grow per key; taking B first and A after puts A's token above B's.
      const b = await engine.acquire('b');
      const a = await engine.acquire('a');
      expect(a.fencingToken).toBeGreaterThan(b.fencingToken);
      expect((await store.set('res:a', a, 'A')).accepted).toBe(true);
      expect((await store.set('res:b', b, 'B')).accepted).toBe(true);
      expect((await store.set('res:b', b, 'B2')).accepted).toBe(true);
      expect(await store.highest('res:a')).toBe(a.fencingToken);
      expect(await store.highest('res:b')).toBe(b.fencingToken);
      await a.release();
      await b.release();
    } finally {
      await engine.close();
    }
  });

  it('reports every refusal to fencingEvents and to its own onStale', async () => {
    const seen: StaleFencingEvent[] = [];
    const own: StaleFencingEvent[] = [];
    const stop = fencingEvents.on((e) => seen.push(e));
    const observed = new RedisFencedStore({ client, onStale: (e) => own.push(e) });
    try {
      await observed.set('obs:1', 10n, 'x');
      await observed.set('obs:1', 9n, 'y');
    } finally {
      stop();
    }
    const expected = {
      type: 'fencing.stale',
      store: 'redis',
      resource: 'obs:1',
      token: 9n,
      highest: 10n,
    };
    expect(seen).toEqual([expect.objectContaining(expected)]);
    expect(own).toEqual([expect.objectContaining(expected)]);
  });

  it('a holder paused past its ttl (SIGSTOP) resumes and its write is refused', async () => {
    const key = 'paused';
    const config = JSON.stringify({ port: server.port, resource: 'acct:paused' });
    const holder = HolderProcess.start(HOLDER, ['redis', config, key, '600']);
    holders.push(holder);
    const held = await holder.next('held', 0, 90_000);
    expect(held.accepted).toBe(true);
    holder.stop();
    const engine = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: 'fenced-test:',
    });
    try {
      // The paused holder cannot renew: the lock expires and this acquire is granted.
      const next = await engine.acquire(key, { ttl: 5_000, wait: 20_000 });
      expect(next.fencingToken).toBeGreaterThan(BigInt(held.token as string));
      expect((await store.set('acct:paused', next, 'next')).accepted).toBe(true);
      holder.cont();
      holder.send({ type: 'write' });
      const wrote = await holder.next('wrote');
      expect(wrote).toMatchObject({ accepted: false, highest: next.fencingToken.toString() });
      expect(await client.get('acct:paused')).toBe('next');
      await next.release();
    } finally {
      await engine.close();
    }
  }, 150_000);
});

describe('RedisFencedStore on Redis Cluster (3 private masters)', () => {
  let cluster: RedisClusterServers;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await RedisClusterServers.start(3);
    client = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    await cluster?.destroy();
  });

  it('every write form runs on Cluster: fence record and key share a slot (no CROSSSLOT)', async () => {
    const store = new RedisFencedStore({ client });
    // Tagged, untagged, untagged with a "}" (the store picks a tag of the same slot), empty tag.
    const keys = ['{order:1}:total', 'order:2', 'a}b', '{}x', 'x{y}z{w}', 'ünï{cødé}'];
    for (const key of keys) {
      expect((await store.set(key, 2n, 'v')).accepted).toBe(true);
      expect((await store.set(key, 1n, 'old')).accepted).toBe(false);
      expect(fencedValue(await store.incrby(`${key}:n`, 2n, 1))).toBe(1);
      expect(await client.get(key)).toBe('v');
    }
  }, 60_000);

  it.each(['app:', '{app}:'])(
    'a client with ioredis keyPrefix %s: the fence is computed on the prefixed key (still one slot)',
    async (keyPrefix) => {
      const prefixed = new Cluster(
        cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
        { keyPrefix },
      );
      try {
        const store = new RedisFencedStore({ client: prefixed });
        for (const key of ['order:9', '{order:9}:total', 'a}b']) {
          expect((await store.set(key, 5n, 'v')).accepted).toBe(true);
          expect((await store.set(key, 4n, 'old')).accepted).toBe(false);
          expect(await client.get(`${keyPrefix}${key}`)).toBe('v');
          expect(await store.highest(key)).toBe(5n);
        }
      } finally {
        prefixed.disconnect();
      }
    },
    60_000,
  );
});
