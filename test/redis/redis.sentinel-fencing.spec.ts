import Redis from 'ioredis';
import Redis60 from 'ioredis-6.0';
import { Pool } from 'pg';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { LockEngine } from '../../lib/core/lock-engine';
import { PostgresFencedStore } from '../../lib/fencing/postgres-fenced.store';
import { RedisFencedStore } from '../../lib/fencing/redis-fenced.store';
import { eventually } from '../support/eventually';
import { PostgresServer } from '../support/postgres-server';
import { RedisSentinelGroup, SENTINEL_MASTER_NAME } from '../support/redis-sentinel';
import { ContenderProcesses } from './contender-processes';
import { check, now, until, WAIT_MS } from './contention';

/**
 * Failovers of a Sentinel group (primary + replica replicating through a proxy, 3 sentinels), with
 * the client docs/backends/redis-production.md shows (failoverDetector + commandTimeout):
 * - the replica cut off, a grant, the primary killed: the promoted replica never saw the grant
 *   (both hold: asynchronous replication), but the new token is above the lost one and the old
 *   holder's late write through RedisFencedStore and PostgresFencedStore is refused;
 * - a failover announced while a client reconnects: ioredis's failover detector ends the client
 *   for good (backend-kit/sentinel-reconnect.ts), and the backend connects it again;
 * - the primary paused (SIGSTOP) under 4 contending OS processes (contender-processes.ts; ttl
 *   30 s, 1 s holds), a failover forced: first grant within the bound, no overlap across the
 *   processes, exact counter, typed errors within the wait, no call hanging.
 */
const PREFIX = 'sentinel-fence:';
let group: RedisSentinelGroup;
let pg: PostgresServer;
let pool: Pool;
let clients: Redis[] = [];
let engines: LockEngine[] = [];
const report = (line: string) => process.stdout.write(`[sentinel failover] ${line}\n`);

function sentinelClient(Client: typeof Redis = Redis): Redis {
  const c = new Client({
    sentinels: group.sentinelAddresses,
    name: SENTINEL_MASTER_NAME,
    failoverDetector: true,
    commandTimeout: 1_000,
    maxRetriesPerRequest: 1,
  });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

function engine(client = sentinelClient()): LockEngine {
  const e = new LockEngine({
    backend: new RedisLockBackend({ client }),
    keyPrefix: PREFIX,
    operationTimeout: 2_000,
  });
  engines.push(e);
  return e;
}

beforeAll(async () => {
  [group, pg] = await Promise.all([RedisSentinelGroup.start(), PostgresServer.start()]);
  pool = new Pool({ ...pg.connection, max: 2 });
  pool.on('error', () => undefined);
}, 120_000);

afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
  clients.forEach((c) => c.disconnect());
  clients = [];
});

afterAll(async () => {
  await pool?.end();
  await pg?.destroy();
  await group?.destroy();
});

describe('Redis Sentinel failovers (1 + 1, 3 sentinels)', () => {
  it('lagging replica then kill: the new holder gets a higher token and the old holder’s late write is refused', async () => {
    await group.settled();
    const a = engine();
    const b = engine();
    const storeClient = sentinelClient();
    const store = new RedisFencedStore({ client: storeClient });
    const key = 'lagging';
    // Earlier grants reached the replica: its fence counter exists there, behind.
    await a.acquire(key, { wait: 0 }).then((h) => h.release());
    await b.acquire('warm', { wait: 0 }).then((h) => h.release());
    const fence = lockKeys(PREFIX + key).fence;
    const primary = group.primary();
    await eventually(
      () => group.cli(group.replica().port, 'GET', fence) === group.cli(primary.port, 'GET', fence),
    );
    group.link.blackhole();
    try {
      const old = await a.acquire(key, { ttl: 30_000, wait: 0 });
      await primary.kill();
      const killedAt = performance.now();
      await group.failover();
      const next = await b.acquire(key, { ttl: 30_000, wait: WAIT_MS });
      report(
        `lagging replica then kill: new grant ${(performance.now() - killedAt).toFixed(0)} ms after the kill; ` +
          `old token ${old.fencingToken}, new token ${next.fencingToken}`,
      );
      expect(next.fencingToken).toBeGreaterThan(old.fencingToken);
      // The store's own client reconnects to the promoted replica on its own schedule.
      await eventually(async () => (await storeClient.ping().catch(() => 'down')) === 'PONG');
      expect((await store.set('account:1', next.fencingToken, 'new holder')).accepted).toBe(true);
      expect((await store.set('account:1', old.fencingToken, 'old holder')).accepted).toBe(false);
      expect(await storeClient.get('account:1')).toBe('new holder');
      // The same through the SQL fenced store (PostgreSQL, the table form).
      const sql = new PostgresFencedStore({ client: pool });
      await sql.createTable();
      await pool.query('CREATE TABLE balances (id TEXT PRIMARY KEY, owner TEXT)');
      const write = (h: typeof old, owner: string) =>
        sql.transaction('account:1', h, (tx) =>
          tx.query(
            'INSERT INTO balances VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET owner = $2',
            ['account:1', owner],
          ),
        );
      expect((await write(next, 'new holder')).accepted).toBe(true);
      expect((await write(old, 'old holder')).accepted).toBe(false);
      const { rows } = await pool.query('SELECT owner FROM balances');
      expect(rows).toEqual([{ owner: 'new holder' }]);
      await next.release();
    } finally {
      group.link.heal();
      await group.restartAsReplica(primary);
    }
  }, 60_000);

  // ioredis 5 and 6.0 end the client there (reconnectAfterSentinelRace); 6.1 reconnects it itself.
  it.each([
    { version: '6.1', Client: Redis, ends: false, story: 'ioredis reconnects the client itself' },
    {
      version: '6.0',
      Client: Redis60 as unknown as typeof Redis,
      ends: true,
      story: 'ioredis ends the client, the backend connects it again',
    },
  ])(
    'a failover announced while the client reconnects (ioredis $version): $story, and locks work again',
    async ({ Client, ends }) => {
      await group.settled();
      const client = sentinelClient(Client);
      const e = engine(client);
      await e.acquire('race', { wait: 0 }).then((h) => h.release());
      // The client asks sentinels in its list's order, the first one first; its failover detector
      // subscribes to +switch-master on all three.
      const [asked, announcer] = group.sentinels;
      const detectorListens = () =>
        /cmd=subscribe/.test(group.cli(announcer.port, 'CLIENT', 'LIST'));
      await eventually(detectorListens);
      let endedTimes = 0;
      client.on('end', () => endedTimes++);
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
      const reconnecting = new Promise<void>((resolve) =>
        client.once('connecting', () => resolve()),
      );
      const primary = group.primary();
      const id = String(await client.client('ID'));
      // The connection drops and the client reconnects: it asks `asked`, which cannot answer yet.
      // Meanwhile a failover is announced, and the detector closes the connector under the attempt
      // (it closes its own subscriptions then, which is how we see it heard the announcement).
      asked.pause();
      try {
        group.cli(primary.port, 'CLIENT', 'KILL', 'ID', id);
        await reconnecting;
        expect(group.cli(announcer.port, 'SENTINEL', 'FAILOVER', SENTINEL_MASTER_NAME)).toBe('OK');
        await eventually(() => !detectorListens(), 20_000);
      } finally {
        asked.resume();
      }
      if (ends) await ended; // ioredis gave up on the client
      // The client is connected again (by the backend where ioredis ended it), and locks work.
      const h = await e.acquire('race', { wait: WAIT_MS });
      expect(h.fencingToken).toBeGreaterThan(0);
      await h.release();
      expect(client.status).toBe('ready');
      if (!ends) expect(endedTimes).toBe(0);
      await group.settled();
    },
    60_000,
  );

  it('the primary paused (SIGSTOP) under 4 contending processes (ttl 30 s, 1 s holds)', async () => {
    await group.settled();
    const client = {
      kind: 'sentinel' as const,
      sentinels: group.sentinelAddresses,
      name: SENTINEL_MASTER_NAME,
    };
    const contenders = await ContenderProcesses.start(4, client, PREFIX);
    try {
      const run = contenders.contend('hot');
      const primary = group.primary();
      await until(() => run.c.grants.length >= 2, now(), 20_000);
      primary.pause();
      const faultAt = now();
      try {
        await group.failover();
        await until(() => run.c.grants.some((g) => g.at > faultAt), faultAt, 15_000);
        const target = run.c.grants.length + 2;
        await until(() => run.c.grants.length >= target, faultAt, 25_000);
      } finally {
        primary.resume();
      }
      check(report, 'Sentinel primary paused', await run.stop(), faultAt);
    } finally {
      await contenders.kill();
    }
    // The old primary comes back as a replica; the link is put back in its path.
    await group.settled();
  }, 120_000);
});
