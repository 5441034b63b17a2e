import { createHash } from 'node:crypto';
import Redis, { Cluster } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { holderOf, SCAN_COUNT } from '../../lib/backends/redis-client/key-scan';
import { LockEngine } from '../../lib/core/lock-engine';
import { RedisClusterServers, RedisServer } from '../support/redis-server';

/**
 * Redis list(prefix, limit): SCAN for holder keys, confirmed by inspect. Before, the backend had no
 * list() and inspect/the live view said "this backend cannot list its keys". Covers both hash-tag
 * forms (a literal key with a brace), keys past one SCAN page, the limit, and every master of a Cluster.
 */
describe('redis backend: list(prefix, limit)', () => {
  let server: RedisServer;
  let cluster: RedisClusterServers;
  const clients: (Redis | Cluster)[] = [];
  const engines: LockEngine[] = [];
  beforeAll(async () => {
    [server, cluster] = await Promise.all([RedisServer.start(), RedisClusterServers.start(3)]);
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    clients.forEach((c) => c.disconnect());
    await Promise.all([server?.destroy(), cluster?.destroy()]);
  });
  const engine = (client: Redis | Cluster) => {
    clients.push(client);
    const e = new LockEngine({
      backend: new RedisLockBackend({ client }),
      keyPrefix: 'app:',
      defaults: { ttl: 30_000, wait: 5_000 },
    });
    engines.push(e);
    return e;
  };

  it('holderOf maps writer, reader and permit keys of both tag forms, and nothing else', () => {
    expect(holderOf('{app:a}')).toBe('app:a');
    expect(holderOf('{app:a}:r')).toBe('app:a');
    expect(holderOf('{app:a}:s')).toBe('app:a');
    expect(holderOf('{app:a}:f')).toBeUndefined();
    expect(holderOf('{app:a}:q')).toBeUndefined();
    expect(holderOf('plain')).toBeUndefined();
    const sha = createHash('sha1').update('app:{x}').digest('hex');
    expect(holderOf(`{#${sha}}app:{x}`)).toBe('app:{x}');
    expect(holderOf(`{#${sha}}app:{x}:r`)).toBe('app:{x}');
    expect(holderOf(`{#${sha}}app:{x}:f`)).toBeUndefined();
    expect(holderOf(`{#${'0'.repeat(40)}}app:{x}`)).toBeUndefined();
  });

  it('standalone: every held key past one SCAN page, brace keys included, within the limit', async () => {
    const e = engine(new Redis({ port: server.port, host: '127.0.0.1' }));
    const n = SCAN_COUNT + 100;
    const keys = Array.from({ length: n }, (_, i) => `many:${i}`);
    const held = await Promise.all(keys.map((k) => e.acquire(k)));
    const brace = await e.acquire('many:{literal}');
    const shared = await e.acquire('many:shared', { mode: 'shared' });
    const listed = await e.operator.list('many:', undefined, 10_000);
    expect(listed.sort()).toEqual([...keys, 'many:{literal}', 'many:shared'].sort());
    expect(await e.operator.list('many:', undefined, 7)).toHaveLength(7);
    expect(await e.operator.list('many:{')).toEqual(['many:{literal}']);
    await Promise.all([...held, brace, shared].map((h) => h.release()));
    expect(await e.operator.list('many:')).toEqual([]);
  });

  it('cluster: keys on every master are listed', async () => {
    const e = engine(new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port }))));
    const keys = Array.from({ length: 60 }, (_, i) => `c:${i}`);
    const held = await Promise.all(keys.map((k) => e.acquire(k)));
    expect((await e.operator.list('c:', undefined, 1_000)).sort()).toEqual([...keys].sort());
    await Promise.all(held.map((h) => h.release()));
    expect(await e.operator.list('c:')).toEqual([]);
  });
});
