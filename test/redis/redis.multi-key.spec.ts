import Redis, { Cluster } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { ACQUIRE_ALL, slotOf } from '../../lib/backends/redis/redis.multi-key';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { RedisClusterServers, RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';

/**
 * Multi-key locks on Redis (a key array): every key in ONE script when the keys share a server
 * (standalone: always; Cluster: one hash slot), counted by the server; all or nothing; the grant
 * is per-key leases underneath (tokens, owner-checked release, renewal, loss); keys across
 * Cluster slots fall back to the canonical-order path.
 */
const PREFIX = 'm:';

/** Script calls the client sends, by sha. */
function spyScripts(client: Redis | Cluster): { bySha: Map<string, number>; stop(): void } {
  const bySha = new Map<string, number>();
  const original = client.evalsha.bind(client);
  const spy = jest.spyOn(client, 'evalsha').mockImplementation(((sha: string, ...rest: never[]) => {
    bySha.set(sha, (bySha.get(sha) ?? 0) + 1);
    return (original as (...a: unknown[]) => Promise<unknown>)(sha, ...rest);
  }) as never);
  return { bySha, stop: () => spy.mockRestore() };
}

const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

describe('RedisLockBackend multi-key (standalone)', () => {
  let server: RedisServer;
  let admin: Redis;
  let client: Redis;
  let engine: LockEngine;

  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis({ port: server.port, host: '127.0.0.1' });
    client = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    engine = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: PREFIX,
      defaults: { ttl: 900, wait: 5_000 },
    });
  });

  afterAll(async () => {
    await engine.close();
    client.disconnect();
    admin.disconnect();
    await server.destroy();
  });

  it('takes every key in one script on the server, each with its own token and lease', async () => {
    // Warm the script cache (the first EVALSHA is answered NOSCRIPT and goes again as EVAL).
    await (await engine.acquire(['warm1', 'warm2'])).release();
    await admin.config('RESETSTAT');
    const spy = spyScripts(client);
    const h = await engine.acquire(['c', 'a', 'b', 'a']);
    spy.stop();
    const info = await admin.info('commandstats');
    const scripts = [...info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)];
    expect(scripts.reduce((s, m) => s + Number(m[2]), 0)).toBe(1);
    expect(spy.bySha.get(ACQUIRE_ALL.sha)).toBe(1);
    expect(total(spy.bySha)).toBe(1);
    expect(h.keys).toEqual(['a', 'b', 'c']);
    const tokens = [...h.fencingTokens.values()];
    expect(tokens.every((t) => t > 0n)).toBe(true);
    for (const k of ['a', 'b', 'c'])
      expect(await admin.exists(lockKeys(PREFIX + k).writer)).toBe(1);
    // Renewed by the watchdog past its 900 ms ttl, per key.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(h.held).toBe(true);
    await h.release();
    for (const k of ['a', 'b', 'c'])
      expect(await admin.exists(lockKeys(PREFIX + k).writer)).toBe(0);
    // The next grant of these keys has larger tokens.
    const again = await engine.acquire(['a', 'b', 'c']);
    for (const [k, t] of again.fencingTokens) expect(t > h.fencingTokens.get(k)!).toBe(true);
    await again.release();
  });

  it('all or nothing: one busy key leaves the others free; a wait then gets all of them', async () => {
    const other = new LockEngine({
      backend: new RedisLockBackend({ client: admin }),
      keyPrefix: PREFIX,
    });
    const busy = await other.acquire('y');
    expect(await engine.tryAcquire(['x', 'y', 'z'])).toBeNull();
    for (const k of ['x', 'y', 'z']) {
      expect((await engine.backend().inspect!(PREFIX + k)).holders.map((h) => h.owner)).toEqual(
        k === 'y' ? [busy.owner] : [],
      );
    }
    const waiting = engine.acquire(['x', 'y', 'z']);
    await busy.release();
    const h = await waiting;
    expect(h.keys).toEqual(['x', 'y', 'z']);
    await h.release();
    await other.close();
  });

  it('losing any key aborts the one signal; release is owner-checked per key', async () => {
    const h = await engine.acquire(['l1', 'l2']);
    await admin.del(lockKeys(`${PREFIX}l2`).writer);
    const other = new LockEngine({
      backend: new RedisLockBackend({ client: admin }),
      keyPrefix: PREFIX,
    });
    const thief = await other.acquire('l2');
    await eventually(() => h.signal.aborted, 10_000);
    expect(h.signal.reason).toBeInstanceOf(LockLostError);
    await h.release().catch(() => undefined);
    expect(await admin.get(lockKeys(`${PREFIX}l2`).writer)).toBe(thief.owner);
    await thief.release();
    await other.close();
  });

  it('a context that holds one of the keys re-enters it (no one-step grant of that key)', async () => {
    await engine.withLock('r1', async (outer) => {
      const h = await engine.acquire(['r1', 'r2']);
      expect(h.fencingTokens.get('r1')).toBe(outer.fencingToken);
      await h.release();
      expect(outer.held).toBe(true);
    });
    expect(await admin.exists(lockKeys(`${PREFIX}r1`).writer, lockKeys(`${PREFIX}r2`).writer)).toBe(
      0,
    );
  });
});

describe('RedisLockBackend multi-key (cluster)', () => {
  let cluster: RedisClusterServers;
  let client: Cluster;
  let engine: LockEngine;

  beforeAll(async () => {
    cluster = await RedisClusterServers.start(3);
    client = new Cluster(
      cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
      { redisOptions: { maxRetriesPerRequest: 1 } },
    );
    client.on('error', () => undefined);
    engine = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: PREFIX,
      defaults: { ttl: 5_000, wait: 5_000 },
    });
  });

  afterAll(async () => {
    await engine.close();
    client.disconnect();
    await cluster?.destroy();
  });

  it('slotOf agrees with the server (CLUSTER KEYSLOT) for plain and brace keys', async () => {
    for (const k of ['a', 'account:42', 'é ü', 'x{y}z', '{}', 'long'.repeat(40)]) {
      const tag = lockKeys(PREFIX + k).writer;
      expect(slotOf(PREFIX + k)).toBe(Number(await client.cluster('KEYSLOT', tag)));
    }
  });

  it('keys of one slot go in one script; keys across slots fall back to canonical order', async () => {
    const bySlot = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const k = `k${i}`;
      const slot = slotOf(PREFIX + k);
      const seen = bySlot.get(slot);
      if (seen) pair = [seen, k];
      else bySlot.set(slot, k);
    }
    let spy = spyScripts(client);
    const one = await engine.acquire(pair);
    spy.stop();
    expect(spy.bySha.get(ACQUIRE_ALL.sha)).toBe(1);
    expect(total(spy.bySha)).toBe(1);
    await one.release();

    const apart = ['p:a', 'p:b'];
    expect(slotOf(PREFIX + apart[0])).not.toBe(slotOf(PREFIX + apart[1]));
    spy = spyScripts(client);
    const two = await engine.acquire(apart);
    spy.stop();
    expect(spy.bySha.get(ACQUIRE_ALL.sha)).toBeUndefined();
    expect(total(spy.bySha)).toBe(2);
    expect(two.keys).toEqual(apart);
    await two.release();
  });
});
