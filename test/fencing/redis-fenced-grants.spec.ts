import Redis from 'ioredis';
import {
  InvalidLockOptionsError,
  LockBackendUnavailableError,
  LockEngine,
  RedisLockBackend,
} from '../../lib';
import { fencedValue, fencingGrant, RedisFencedStore } from '../../lib/fencing';
import { RedisServer } from '../support/redis-server';
import { stopped } from './stopped';

/** Two grants that got one token (what a lossy failover does), as the store reads a handle. */
const grant = (owner: string, fencingToken: bigint) => ({ key: 'k', fencingToken, owner });

describe('RedisFencedStore: grants, fence records and faults (a private redis-server)', () => {
  let server: RedisServer;
  let client: Redis;
  let store: RedisFencedStore;

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis({ host: '127.0.0.1', port: server.port });
    store = new RedisFencedStore({ client });
  });
  afterAll(async () => {
    client.disconnect();
    await server.destroy();
  });

  it('refuses an equal token from another grant on every write form; the holder writes on', async () => {
    const next = grant('new-holder', 40n) as never;
    const old = grant('old-holder', 40n) as never;
    expect((await store.set('g:{1}:v', next, 'new')).accepted).toBe(true);
    expect((await store.set('g:{1}:v', next, 'new again')).accepted).toBe(true);
    const late = await store.set('g:{1}:v', old, 'stale');
    expect(late).toMatchObject({ accepted: false, token: 40n, highest: 40n });
    expect((await store.hset('g:{1}:v', old, { a: 1 })).accepted).toBe(false);
    expect((await store.incrby('g:{1}:v', old, 1)).accepted).toBe(false);
    expect((await store.del('g:{1}:v', old)).accepted).toBe(false);
    expect((await store.advance('g:{1}:v', old)).accepted).toBe(false);
    const touch = store.script("return redis.call('SET', KEYS[1], 'stale')");
    expect((await store.run(touch, old, ['g:{1}:v'])).accepted).toBe(false);
    expect(await client.get('g:{1}:v')).toBe('new again');
    // A real handle writes many times under its grant.
    const engine = new LockEngine({ backend: new RedisLockBackend({ client }), keyPrefix: 'g:' });
    try {
      const lock = await engine.acquire('acct');
      for (const n of [1, 2, 3])
        expect(fencedValue(await store.incrby('g:{2}:n', lock, 1))).toBe(n);
      await lock.release();
    } finally {
      await engine.close();
    }
  });

  it("a multi-key handle is refused; fencingGrant(handle, key) fences with that key's token", async () => {
    const engine = new LockEngine({ backend: new RedisLockBackend({ client }), keyPrefix: 'mk:' });
    try {
      for (let i = 0; i < 3; i++) await (await engine.acquire('b')).release();
      const both = await engine.acquire(['a', 'b']);
      const tokenOfB = both.fencingTokens.get('b') as bigint;
      await expect(store.set('balance:{b}', both, 'x')).rejects.toThrow(InvalidLockOptionsError);
      expect(await client.exists('balance:{b}')).toBe(0);
      expect((await store.set('balance:{b}', fencingGrant(both, 'b'), 'x')).accepted).toBe(true);
      expect(await store.highest('balance:{b}')).toBe(tokenOfB);
      await both.release();
    } finally {
      await engine.close();
    }
  });

  it('refuses a fence record key as a data key, so no write can reset a fence', async () => {
    expect((await store.set('acct', 5n, 'five')).accepted).toBe(true);
    const record = store.fenceKey('acct');
    expect(record).toBe('fence:{acct}');
    for (const write of [
      async () => store.set(record, 9n, '1'),
      async () => store.del(record, 9n),
      async () => store.incrby('fence:x', 9n, 1),
      async () => store.run(store.script('return 1'), 9n, ['{t}:x', 'fence:{t}:x']),
    ])
      await expect(write()).rejects.toThrow(/does not start with the fence records' prefix/);
    expect((await store.set('acct', 4n, 'stale')).accepted).toBe(false);
    expect(await client.get('acct')).toBe('five');
  });

  it("refuses an empty prefix; a record key that holds another app's value is a typed error", async () => {
    expect(() => new RedisFencedStore({ client, prefix: '' })).toThrow(InvalidLockOptionsError);
    await client.set('shared:{job}', 'c0ffee-owner-token');
    const clash = new RedisFencedStore({ client, prefix: 'shared:' });
    await expect(clash.advance('job', 1n)).rejects.toThrow(/not a fence record/);
    await expect(clash.highest('job')).rejects.toThrow(InvalidLockOptionsError);
    expect(await client.get('shared:{job}')).toBe('c0ffee-owner-token');
  });

  it('refuses a client keyPrefix whose { would move the fence record to another slot', () => {
    for (const keyPrefix of ['app{', 'app{}:', 'a}{b'])
      expect(
        () => new RedisFencedStore({ client: { ...client, options: { keyPrefix } } as never }),
      ).toThrow(/keyPrefix/);
    const tagged = new Redis({ lazyConnect: true, keyPrefix: '{app}:' });
    expect(() => new RedisFencedStore({ client: tagged })).not.toThrow();
    tagged.disconnect();
  });

  it('refuses tokens above 2^63-1 before sending anything', async () => {
    await expect(store.set('big', 2n ** 63n, 'x')).rejects.toThrow(InvalidLockOptionsError);
    expect(await client.exists('big')).toBe(0);
  });

  it('reset() forgets a forged fence; retention makes records expire', async () => {
    expect((await store.advance('account:victim', 2n ** 63n - 1n)).accepted).toBe(true);
    expect((await store.advance('account:victim', 12n)).accepted).toBe(false);
    expect(await store.reset('account:victim')).toBe(true);
    expect((await store.advance('account:victim', 12n)).accepted).toBe(true);
    const carried = new RedisFencedStore({ client, prefix: 'carried:', retention: 60_000 });
    expect((await carried.advance('account:new', 1n)).accepted).toBe(true);
    const ttl = await client.pttl(carried.fenceKey('account:new'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(() => new RedisFencedStore({ client, retention: 0 })).toThrow(/retention/);
  });

  it('a paused server: a fenced write fails with LockBackendUnavailableError at its timeout', async () => {
    const bounded = new RedisFencedStore({ client, timeout: 300 });
    server.pause();
    await stopped(server);
    try {
      await expect(bounded.set('paused', 1n, 'x')).rejects.toThrow(LockBackendUnavailableError);
      await expect(bounded.advance('paused', 1n)).rejects.toMatchObject({
        code: 'LOCK_BACKEND_UNAVAILABLE',
        key: 'paused',
      });
    } finally {
      server.resume();
    }
    expect((await bounded.set('paused', 1n, 'x')).accepted).toBe(true);
  }, 15_000);
});
