import Redis from 'ioredis';
import { fenceKeyFor, hashTag, keySlot } from '../../lib/fencing';
import { RedisServer } from '../support/redis-server';
import { clusterPorts, tempDir } from '../support/server-process';

/**
 * The slot function is checked against the server's own CLUSTER KEYSLOT (a cluster-enabled
 * redis-server answers it with no slots assigned), over keys chosen to hit every branch of the
 * hash-tag rule, plus seeded random keys; and every fence key must land in its resource's slot.
 */
const RULE_CASES = [
  'plain',
  '{user1000}.following',
  '{user1000}.followers',
  'foo{}{bar}', // first { is followed by }: the whole key is hashed
  'foo{{bar}}zap', // tag "{bar"
  'foo{bar}{zap}', // tag "bar"
  '{}',
  '{',
  '}',
  'a}b{c}',
  '}{x}',
  'x{',
  '{a',
  'ünïcødé{tåg}',
  'emoji😀{😀}',
  '',
];

function seededKeys(n: number): string[] {
  let s = 12345;
  const next = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff), s);
  const alphabet = 'ab{}:xyz01é}{';
  return Array.from({ length: n }, () =>
    Array.from({ length: 1 + (next() % 12) }, () => alphabet[next() % alphabet.length]).join(''),
  );
}

describe('Redis Cluster hash slots (checked against CLUSTER KEYSLOT)', () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    const dir = tempDir('redis-slot');
    const [, [busPort]] = await clusterPorts(1);
    server = await RedisServer.start([
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(busPort),
      '--cluster-config-file',
      `${dir}/nodes.conf`,
    ]);
    client = new Redis({ host: '127.0.0.1', port: server.port });
  });
  afterAll(async () => {
    client.disconnect();
    await server.destroy();
  });

  const serverSlots = async (keys: string[]): Promise<number[]> => {
    const pipeline = client.pipeline();
    for (const key of keys) pipeline.call('CLUSTER', 'KEYSLOT', key);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, slot]) => {
      if (error) throw error;
      return Number(slot);
    });
  };

  it('keySlot equals CLUSTER KEYSLOT for the hash-tag rule cases and 500 seeded keys', async () => {
    const keys = [...RULE_CASES, ...seededKeys(500)];
    expect(keys.map(keySlot)).toEqual(await serverSlots(keys));
    expect(hashTag('foo{{bar}}zap')).toBe('{bar');
    expect(hashTag('foo{}{bar}')).toBeUndefined();
  });

  it("every fence key is in its resource's slot, and distinct resources get distinct fence keys", async () => {
    const resources = [...RULE_CASES.filter((k) => k !== ''), ...seededKeys(500)];
    const fenceKeys = resources.map((r) => fenceKeyFor(r, 'fence:'));
    expect(await serverSlots(fenceKeys)).toEqual(await serverSlots(resources));
    const distinct = new Map(resources.map((r, i) => [r, fenceKeys[i]]));
    expect(new Set(distinct.values()).size).toBe(distinct.size);
    for (const f of fenceKeys) expect(distinct.has(f)).toBe(false); // never a resource's own name
  });
});
