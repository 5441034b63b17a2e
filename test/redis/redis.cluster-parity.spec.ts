import { Cluster } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { stopSlotRefresh, type RedisSubscriber } from '../../lib/backends/redis-client';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { HolderProcess } from '../support/holder-harness';
import { eventually } from '../support/eventually';
import { RedisClusterGroup } from '../support/redis-cluster';
import { clusterProcesses, keyOnFreshPrimary } from './cluster-clients';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { keySlot } from '../../lib/backend-kit/cluster-slot';
import { semaphoreKeys } from '../../lib/backends/redis/redis.semaphore-scripts';

/**
 * What standalone Redis does that Cluster must do too, on a private 3 + 3 Cluster: a waiter whose
 * process died is skipped within a second (PUBLISH cannot tell there, so a handed-off grant is
 * provisional until the waiter confirms it), and `replicas` waits for a replica of the primary
 * that owns the key's slot.
 */
const PREFIX = 'parity:';
let group: RedisClusterGroup;
const procs = clusterProcesses(PREFIX, () => group);
const report = (line: string) => process.stdout.write(`[cluster parity] ${line}\n`);

beforeAll(async () => {
  group = await RedisClusterGroup.start();
}, 60_000);

afterEach(() => procs.closeAll());

afterAll(async () => group?.destroy());

describe('Redis Cluster parity with standalone', () => {
  it('a waiter whose process was killed does not delay the next live waiter by more than 1 s', async () => {
    const { key } = keyOnFreshPrimary(group, PREFIX, 'dead-waiter');
    const admin = procs.admin();
    const queue = lockKeys(PREFIX + key).queue;
    const holder = procs.open();
    const held = await holder.acquire(key, { ttl: 30_000 });
    const dead = HolderProcess.start(`${__dirname}/cluster-waiter.process.ts`, [
      group.nodes.map((n) => n.port).join(','),
      PREFIX,
      key,
    ]);
    try {
      await dead.next('ready', 0, 40_000);
      await eventually(async () => (await admin.zcard(queue)) === 1, 10_000, 20);
      const live = procs.open();
      const waiting = live.acquire(key, { ttl: 30_000, wait: 10_000 });
      await eventually(async () => (await admin.zcard(queue)) === 2, 10_000, 20);
      await dead.kill();
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      const delay = performance.now() - releasedAt;
      report(`live waiter granted ${delay.toFixed(0)} ms after the release (dead waiter ahead)`);
      expect(delay).toBeLessThan(1_000);
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      await next.release();
    } finally {
      await dead.kill();
    }
  }, 60_000);

  it('a semaphore waiter whose process was killed does not delay the next live waiter by more than 1 s', async () => {
    const { key } = keyOnFreshPrimary(group, PREFIX, 'dead-permit-waiter');
    const admin = procs.admin();
    const queue = semaphoreKeys(PREFIX + key).queue;
    const holder = procs.open();
    const held = await holder.acquire(key, { ttl: 30_000, permits: 1 });
    const dead = HolderProcess.start(`${__dirname}/cluster-waiter.process.ts`, [
      group.nodes.map((n) => n.port).join(','),
      PREFIX,
      key,
      '1',
    ]);
    try {
      await dead.next('ready', 0, 40_000);
      await eventually(async () => (await admin.zcard(queue)) === 1, 10_000, 20);
      const live = procs.open();
      const waiting = live.acquire(key, { ttl: 30_000, wait: 10_000, permits: 1 });
      await eventually(async () => (await admin.zcard(queue)) === 2, 10_000, 20);
      await dead.kill();
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      const delay = performance.now() - releasedAt;
      report(
        `live permit waiter granted ${delay.toFixed(0)} ms after the release (dead waiter ahead)`,
      );
      expect(delay).toBeLessThan(1_000);
      await next.release();
    } finally {
      await dead.kill();
    }
  }, 60_000);

  it('a live waiter confirms its handed-off grant and keeps it for its whole ttl', async () => {
    const { key } = keyOnFreshPrimary(group, PREFIX, 'live-handoff');
    const admin = procs.admin();
    const a = procs.open();
    const b = procs.open();
    const held = await a.acquire(key, { ttl: 30_000 });
    const waiting = b.acquire(key, { ttl: 30_000, wait: 10_000 });
    await eventually(async () => (await admin.zcard(lockKeys(PREFIX + key).queue)) === 1);
    await held.release();
    const next = await waiting;
    // Confirmed: re-dated to its ttl, not the provisional handoff's half second.
    expect(await admin.pttl(procs.writerKey(key))).toBeGreaterThan(20_000);
    expect(next.held).toBe(true);
    await next.release();
  });

  it('"replicas" works with a Cluster client: WAIT on the primary of the key, whose replica holds the grant', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'replicas');
    const engine = procs.open({ replicas: { count: 1, timeout: 1_000 } });
    const h = await engine.acquire(key, { wait: 0 });
    const replica = group.replicaOf(primary);
    // WAIT returned: the replica of the key's own primary has the grant now.
    expect(group.readOnReplica(replica.port, procs.writerKey(key))).toBe(h.owner);
    await h.release();
  });

  it('"replicas" unmet on Cluster: the acquire fails with "only 0 of 1 replicas acknowledged" and leaves no lock', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'replicas-unmet');
    const engine = procs.open({ replicas: { count: 1, timeout: 300 } });
    const admin = procs.admin();
    await admin.ping();
    const replica = group.replicaOf(primary);
    group.pause(replica);
    try {
      const started = performance.now();
      const error = await engine.acquire(key, { wait: 5_000 }).catch((e: unknown) => e);
      const ms = performance.now() - started;
      expect(error).toBeInstanceOf(LockBackendUnavailableError);
      expect((error as Error).message).toMatch(
        /only 0 of 1 replicas acknowledged the grant within 300 ms \(option "replicas"\)/,
      );
      // At once, not at the end of the wait: the refusal is the answer.
      expect(ms).toBeLessThan(5_000);
      expect(await admin.exists(procs.writerKey(key))).toBe(0);
    } finally {
      group.resume(replica);
    }
  });

  it('"replicas" on Cluster: a renewal needs the acks of each renewed key’s own primary, not those of the first key’s', async () => {
    const x = keyOnFreshPrimary(group, PREFIX, 'renew-x');
    const y = keyOnFreshPrimary(group, PREFIX, 'renew-y', [x.primary]);
    const engine = procs.open({ replicas: { count: 1, timeout: 300 } });
    // One watchdog batch renews both, x first.
    const hx = await engine.acquire(x.key, { ttl: 3_000, wait: 0 });
    const hy = await engine.acquire(y.key, { ttl: 3_000, wait: 0 });
    const replica = group.replicaOf(y.primary);
    group.pause(replica);
    try {
      // y's renewals reach no replica: its lease ends with its validity (ttl 3 s), lost. (With the
      // WAIT on x's primary alone, both renewals counted as acknowledged and y stayed held.)
      await eventually(() => hy.signal.aborted, 8_000, 20);
      expect(hy.signal.reason).toBeInstanceOf(LockLostError);
    } finally {
      group.resume(replica);
    }
    await hx.release().catch(() => undefined);
  });

  it('"replicas" on Cluster covers semaphore permits: a permit granted and renewed with acks, refused without', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'replicas-permits');
    const engine = procs.open({ replicas: { count: 1, timeout: 300 } });
    const permit = await engine.acquire(key, { permits: 2, ttl: 3_000, wait: 0 });
    await permit.extend();
    const replica = group.replicaOf(primary);
    group.pause(replica);
    try {
      const error = await engine
        .acquire(key, { permits: 2, ttl: 3_000, wait: 0 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockBackendUnavailableError);
      expect((error as Error).message).toMatch(/only 0 of 1 replicas acknowledged the grant/);
    } finally {
      group.resume(replica);
    }
    expect(permit.held).toBe(true);
    await permit.release();
  });

  it('"replicas" on Cluster: a permit granted through an ASK redirect (slot migrating) needs the acks of the node that took it', async () => {
    // A slot being migrated with every key of the semaphore already on the importing node: the
    // scripts run there through ASK, while the client's slot map still names the old primary.
    const { key, primary: from } = keyOnFreshPrimary(group, PREFIX, 'ask-permit');
    const { primary: to } = keyOnFreshPrimary(group, PREFIX, 'ask-target', [from]);
    const admin = procs.admin();
    const permitKeys = semaphoreKeys(PREFIX + key);
    const holders = [procs.open(), procs.open()];
    const [h1] = await Promise.all(holders.map((e) => e.acquire(key, { permits: 2, wait: 0 })));
    // Two waiters, so the queue (and every other key of the semaphore) still exists once the
    // first is served.
    const acked = procs.open({ replicas: { count: 1, timeout: 300 } });
    // Its wait outlasts a lost or late handoff message under load: a queued waiter re-checks on
    // the server every 5 s, and that re-check must meet the same refusal.
    const waiting = acked.acquire(key, { permits: 2, wait: 25_000 });
    await eventually(async () => (await admin.zcard(permitKeys.queue)) === 1, 10_000, 20);
    // The second waiter is a process paused once queued: on Cluster a handoff is provisional for
    // HANDOFF_CONFIRM_MS, and a live second waiter's periodic re-check in that window (under load,
    // the first one's confirmation can be late) would take the permit instead (seen in CI).
    const behind = HolderProcess.start(`${__dirname}/cluster-waiter.process.ts`, [
      group.nodes.map((n) => n.port).join(','),
      PREFIX,
      key,
      '2',
    ]);
    await behind.next('ready', 0, 40_000);
    await eventually(async () => (await admin.zcard(permitKeys.queue)) === 2, 10_000, 20);
    behind.stop();
    const migration = group.openMigration(keySlot(permitKeys.permits), from, to);
    const replica = group.replicaOf(to);
    try {
      expect(migration.moveKeys(100).sort()).toEqual(Object.values(permitKeys).sort());
      group.pause(replica);
      // The release runs on the importing node (ASK) and hands the permit to the first waiter,
      // whose confirming script must be acknowledged by a replica of that node: none can.
      await h1.release();
      const outcome = await waiting.then(
        () => 'granted',
        (e: Error) => e.message,
      );
      expect(outcome).toMatch(/only 0 of 1 replicas acknowledged the grant/);
    } finally {
      migration.close();
      group.resume(replica);
      await behind.kill();
    }
  }, 60_000);

  it('"replicas" on Cluster: a grant whose slot moved since the client read its slot map (MOVED) needs the acks of the new primary', async () => {
    // ioredis 6.1 resends a redirected command of a pipeline on its own through the cluster: the
    // script would run on the new primary and the WAIT of its pipeline on the old one.
    const { key, primary: from } = keyOnFreshPrimary(group, PREFIX, 'moved-grant');
    const { key: onTo, primary: to } = keyOnFreshPrimary(group, PREFIX, 'moved-target', [from]);
    // No periodic refresh: the client's slot map names `from` until a MOVED says otherwise.
    const client = new Cluster(group.addresses, { slotsRefreshInterval: 0 });
    client.on('error', () => undefined);
    const acked = new LockEngine({
      backend: new RedisLockBackend({ client, replicas: { count: 1, timeout: 300 } }),
      keyPrefix: PREFIX,
      defaults: { ttl: 30_000, wait: 0 },
    });
    const replica = group.replicaOf(to);
    try {
      // Both primaries have run the scripts (no NOSCRIPT to send the grant round again).
      for (const k of [key, onTo]) await (await acked.acquire(k)).release();
      const slot = keySlot(procs.writerKey(key));
      const migration = group.openMigration(slot, from, to);
      migration.moveKeys(100);
      migration.close();
      expect(client.slots[slot]?.[0]).toBe(`127.0.0.1:${from}`);
      group.pause(replica);
      const outcome = await acked.acquire(key).then(
        () => 'granted',
        (e: Error) => e.message,
      );
      expect(outcome).toMatch(/only 0 of 1 replicas acknowledged the grant/);
      expect(await procs.admin().exists(procs.writerKey(key))).toBe(0);
    } finally {
      group.resume(replica);
      await acked.close();
      client.disconnect();
      stopSlotRefresh(client);
    }
  });

  it('a backend closed while its pub/sub connection refreshes the slot map leaves no refresh armed (the process can exit)', async () => {
    // ioredis arms the next periodic refresh when the one under way ends, after disconnect() too,
    // and from there refreshes an empty pool every interval for ever (stopSlotRefresh).
    const client = new Cluster(group.addresses, {
      slotsRefreshInterval: 200,
      slotsRefreshTimeout: 800,
    });
    client.on('error', () => undefined);
    const backend = new RedisLockBackend({ client });
    const engine = new LockEngine({ backend, keyPrefix: PREFIX });
    // A wait > 0 makes the backend open its pub/sub connection: a duplicate of the client.
    await (await engine.acquire('refresh', { wait: 1_000 })).release();
    const subscriber = (backend as unknown as { subscriber: RedisSubscriber }).subscriber;
    await subscriber.ensure();
    // ioredis' own fields (not in its types): a refresh under way, and the next one's timer.
    type Refresher = { isRefreshing: boolean; slotsTimer: NodeJS.Timeout | null };
    const sub = (subscriber as unknown as { connection: Refresher }).connection;
    for (const n of group.nodes) group.pause(n);
    try {
      // The next periodic refresh asks a paused node: it is under way until the nodes resume.
      await eventually(() => sub.isRefreshing);
      await engine.close();
    } finally {
      for (const n of group.nodes) group.resume(n);
    }
    await eventually(() => !sub.isRefreshing);
    expect(sub.slotsTimer ? 'a refresh armed' : 'none').toBe('none');
    client.disconnect();
    stopSlotRefresh(client);
  });
});
