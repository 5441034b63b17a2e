import { RedisFencedStore } from '../../lib/fencing/redis-fenced.store';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { eventually } from '../support/eventually';
import { RedisClusterGroup } from '../support/redis-cluster';
import { clusterProcesses, keyOnFreshPrimary } from './cluster-clients';
import { check, contend, WAIT_MS } from './contention';

/**
 * Failovers on a private 3 + 3 Redis Cluster (cluster-node-timeout 2 s), with the client
 * docs/backends/redis-production.md shows. Each fault hits another primary (no restarts):
 * - a replica cut off from its primary, a grant, then the primary killed: the promoted replica
 *   never saw the grant, so the next holder overlaps the old one (asynchronous replication; the
 *   docs say so), but its token is above the old one and the old holder's late write through the
 *   Redis fenced store is refused;
 * - the hot key's primary killed, then paused (SIGSTOP), under 4 contending engines (own clients),
 *   ttl 30 s, 1 s holds: no overlap, exact counter, tokens in grant order, every error typed and
 *   within its wait, and the first grant after the fault within RECOVERY_BOUND_MS.
 */
const PREFIX = 'failover:';
let group: RedisClusterGroup;
const procs = clusterProcesses(PREFIX, () => group);
const faulted: number[] = [];
const report = (line: string) => process.stdout.write(`[cluster failover] ${line}\n`);

beforeAll(async () => {
  group = await RedisClusterGroup.start();
}, 60_000);

afterEach(() => procs.closeAll());

afterAll(async () => group?.destroy());

describe('Redis Cluster failovers (3 + 3, node timeout 2 s)', () => {
  it('lagging replica then kill: the new holder gets a higher token and the old holder’s late write is refused', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'lagging');
    faulted.push(primary);
    // The fenced resource lives on another primary, which stays up.
    const resource = keyOnFreshPrimary(group, PREFIX, 'account', faulted);
    const storeClient = procs.admin();
    const store = new RedisFencedStore({ client: storeClient });
    const a = procs.open();
    const b = procs.open();
    await b.acquire('warm', { wait: 0 }).then((h) => h.release());
    // Earlier grants of the key reached the replica: its fence counter exists there, behind.
    await a.acquire(key, { wait: 0 }).then((h) => h.release());
    const replica = group.replicaOf(primary);
    const fence = lockKeys(PREFIX + key).fence;
    await eventually(
      () => group.readOnReplica(replica.port, fence) === group.cli(primary, 'GET', fence),
    );
    // Cut the replica off: stopped, and its link dropped by the primary, so the grant never
    // reaches it (the stop is short: well under the node timeout).
    group.pause(replica);
    group.cli(primary, 'CLIENT', 'KILL', 'TYPE', 'replica');
    const old = await a.acquire(key, { ttl: 30_000, wait: 0 });
    await group.byPort(primary).kill();
    const killedAt = performance.now();
    group.resume(replica);
    await group.promotedFrom(primary, procs.writerKey(key));
    const promotedMs = performance.now() - killedAt;
    const next = await b.acquire(key, { ttl: 30_000, wait: WAIT_MS });
    const grantMs = performance.now() - killedAt;
    report(
      `lagging replica then kill: promoted in ${promotedMs.toFixed(0)} ms, new grant ${grantMs.toFixed(0)} ms after the kill; ` +
        `old token ${old.fencingToken}, new token ${next.fencingToken} (the old grant was lost: both hold)`,
    );
    expect(next.fencingToken).toBeGreaterThan(old.fencingToken);
    const res = `${resource.key}:balance`;
    expect((await store.set(res, next.fencingToken, 'new holder')).accepted).toBe(true);
    const late = await store.set(res, old.fencingToken, 'old holder');
    expect(late.accepted).toBe(false);
    expect(await storeClient.get(res)).toBe('new holder');
    await next.release();
  }, 60_000);

  it('the hot key’s primary killed under 4 contending engines (ttl 30 s, 1 s holds)', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'hot-kill', faulted);
    faulted.push(primary);
    const engines = [procs.open(), procs.open(), procs.open(), procs.open()];
    const run = contend(engines, key);
    while (run.c.grants.length < 2) await new Promise((r) => setTimeout(r, 50));
    await group.byPort(primary).kill();
    const faultAt = performance.now();
    while (!run.c.grants.some((g) => g.at > faultAt) && performance.now() - faultAt < 15_000)
      await new Promise((r) => setTimeout(r, 50));
    // Two more grants after the first one: the queue runs again.
    const target = run.c.grants.length + 2;
    while (run.c.grants.length < target && performance.now() - faultAt < 25_000)
      await new Promise((r) => setTimeout(r, 50));
    await run.stop();
    check(report, 'primary killed', run.c, faultAt);
  }, 60_000);

  it('the hot key’s primary paused (SIGSTOP) under 4 contending engines (ttl 30 s, 1 s holds)', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'hot-stop', faulted);
    faulted.push(primary);
    const engines = [procs.open(), procs.open(), procs.open(), procs.open()];
    const run = contend(engines, key);
    while (run.c.grants.length < 2) await new Promise((r) => setTimeout(r, 50));
    const node = group.byPort(primary);
    group.pause(node);
    const faultAt = performance.now();
    try {
      while (!run.c.grants.some((g) => g.at > faultAt) && performance.now() - faultAt < 15_000)
        await new Promise((r) => setTimeout(r, 50));
      const target = run.c.grants.length + 2;
      while (run.c.grants.length < target && performance.now() - faultAt < 25_000)
        await new Promise((r) => setTimeout(r, 50));
    } finally {
      // It comes back as a replica of its promoted replica.
      group.resume(node);
    }
    await run.stop();
    check(report, 'primary paused', run.c, faultAt);
  }, 60_000);
});
