import { createPool, type Pool as MySqlPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlFencedStore } from '../../lib/fencing/mysql-fenced.store';
import { PostgresFencedStore } from '../../lib/fencing/postgres-fenced.store';
import { RedisFencedStore } from '../../lib/fencing/redis-fenced.store';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { keySlot } from '../../lib/backend-kit/cluster-slot';
import { eventually } from '../support/eventually';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';
import { RedisClusterGroup } from '../support/redis-cluster';
import { clusterProcesses, keyOnFreshPrimary } from './cluster-clients';
import { ContenderProcesses } from './contender-processes';
import { check, now, until, WAIT_MS, type Contention } from './contention';

/**
 * Failovers on a private 3 + 3 Redis Cluster (cluster-node-timeout 2 s), with the client
 * docs/backends/redis-production.md shows. Each fault hits another primary (no restarts):
 * - a replica cut off from its primary, a grant, then the primary killed: the promoted replica
 *   never saw the grant, so the next holder overlaps the old one (asynchronous replication; the
 *   docs say so), but its token is above the old one and the old holder's late write through the
 *   Redis, PostgreSQL and MySQL (MariaDB) fenced stores is refused (the new holder's write is
 *   accepted);
 * - the hot key's primary killed, then paused (SIGSTOP), under 4 contending OS processes (each its
 *   own client and engine; contender-processes.ts), ttl 30 s, 1 s holds: no overlap across the
 *   processes, exact counter, tokens in grant order, every error typed and within its wait, no call
 *   hanging, and the first grant after the fault within RECOVERY_BOUND_MS;
 * - the hot key's slot migrated slowly to another primary (SETSLOT MIGRATING / IMPORTING, one key
 *   per MIGRATE 300 ms apart, the slot open for at least 3 s, then SETSLOT NODE) under the same 4
 *   processes: while the slot is open every lock script on it is refused (TRYAGAIN: its keys are
 *   split or missing), so no grant; no overlap, exact counter, typed errors within the wait, and
 *   the first grant within MIGRATION_RECOVERY_BOUND_MS of the migration's end.
 */
/** After a migration's last SETSLOT NODE: a failed release is retried within 1 s, then handed on. */
const MIGRATION_RECOVERY_BOUND_MS = 3_000;
const PREFIX = 'failover:';
let group: RedisClusterGroup;
let contenders: ContenderProcesses;
let pg: PostgresServer;
let pool: Pool;
let maria: MariaDbServer;
let mysql: MySqlPool;
const procs = clusterProcesses(PREFIX, () => group);
const faulted: number[] = [];
const report = (line: string) => process.stdout.write(`[cluster failover] ${line}\n`);

beforeAll(async () => {
  [group, pg, maria] = await Promise.all([
    RedisClusterGroup.start(),
    PostgresServer.start(),
    MariaDbServer.start(),
  ]);
  mysql = createPool({ ...maria.connection, connectionLimit: 2 });
  pool = new Pool({ ...pg.connection, max: 2 });
  pool.on('error', () => undefined);
  const ports = group.nodes.map((n) => n.port);
  contenders = await ContenderProcesses.start(4, { kind: 'cluster', ports }, PREFIX);
}, 120_000);

afterEach(() => procs.closeAll());

afterAll(async () => {
  await contenders?.kill();
  await pool?.end();
  await pg?.destroy();
  await mysql?.end();
  await maria?.destroy();
  await group?.destroy();
});

/** Waits for the first grant after the fault, then two more: the queue runs again. */
async function afterFault(c: Contention, faultAt: number): Promise<void> {
  await until(() => c.grants.some((g) => g.at > faultAt), faultAt, 15_000);
  const target = c.grants.length + 2;
  await until(() => c.grants.length >= target, faultAt, 25_000);
}

describe('Redis Cluster failovers (3 + 3, node timeout 2 s)', () => {
  it('the hot key’s slot migrated slowly to another primary under 4 contending processes', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'hot-move');
    const writer = procs.writerKey(key);
    const slot = keySlot(writer);
    const owner = group.slotOwners();
    const to =
      owner((slot + 8_192) % 16_384) === primary ? owner(0) : owner((slot + 8_192) % 16_384);
    const run = contenders.contend(key);
    await until(() => run.c.grants.length >= 2, now(), 20_000);
    const openedAt = now();
    const moved = await group.migrateSlot(slot, primary, to, { stepMs: 300, minMs: 3_000 });
    const endAt = now();
    await afterFault(run.c, endAt);
    const c = await run.stop();
    const during = c.grants.filter((g) => g.at > openedAt && g.at < endAt).length;
    report(
      `slot migration: open ${(endAt - openedAt).toFixed(0)} ms, ${moved.length} keys moved, ` +
        `${during} grants while open`,
    );
    check(report, 'slot migrated slowly', c, endAt, MIGRATION_RECOVERY_BOUND_MS);
    expect(group.primaryOfKey(writer)).toBe(to);
    expect(moved).toContain(lockKeys(PREFIX + key).fence);
  }, 60_000);

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
    // The same through the SQL fenced stores (the table form): the new holder's write commits, the
    // old holder's late one is refused and rolled back.
    const pgStore = new PostgresFencedStore({ client: pool });
    await pgStore.createTable();
    await pool.query('CREATE TABLE balances (id TEXT PRIMARY KEY, owner TEXT)');
    const pgWrite = (h: typeof old, owner: string) =>
      pgStore.transaction(res, h, (tx) =>
        tx.query('INSERT INTO balances VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET owner = $2', [
          res,
          owner,
        ]),
      );
    expect((await pgWrite(next, 'new holder')).accepted).toBe(true);
    expect((await pgWrite(old, 'old holder')).accepted).toBe(false);
    const { rows } = await pool.query('SELECT owner FROM balances WHERE id = $1', [res]);
    expect(rows).toEqual([{ owner: 'new holder' }]);
    const myStore = new MySqlFencedStore({ client: mysql });
    await myStore.createTable();
    await mysql.query('CREATE TABLE balances (id VARCHAR(200) PRIMARY KEY, owner TEXT)');
    const myWrite = (h: typeof old, owner: string) =>
      myStore.transaction(res, h, (tx) =>
        tx.query(
          'INSERT INTO balances VALUES (?, ?) ON DUPLICATE KEY UPDATE owner = VALUES(owner)',
          [res, owner],
        ),
      );
    expect((await myWrite(next, 'new holder')).accepted).toBe(true);
    expect((await myWrite(old, 'old holder')).accepted).toBe(false);
    const [myRows] = await mysql.query('SELECT owner FROM balances WHERE id = ?', [res]);
    expect(myRows).toEqual([{ owner: 'new holder' }]);
    await next.release();
  }, 60_000);

  it('the hot key’s primary killed under 4 contending processes (ttl 30 s, 1 s holds)', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'hot-kill', faulted);
    faulted.push(primary);
    const run = contenders.contend(key);
    await until(() => run.c.grants.length >= 2, now(), 20_000);
    await group.byPort(primary).kill();
    const faultAt = now();
    await afterFault(run.c, faultAt);
    check(report, 'primary killed', await run.stop(), faultAt);
  }, 60_000);

  it('the hot key’s primary paused (SIGSTOP) under 4 contending processes (ttl 30 s, 1 s holds)', async () => {
    const { key, primary } = keyOnFreshPrimary(group, PREFIX, 'hot-stop', faulted);
    faulted.push(primary);
    const run = contenders.contend(key);
    await until(() => run.c.grants.length >= 2, now(), 20_000);
    const node = group.byPort(primary);
    group.pause(node);
    const faultAt = now();
    try {
      await afterFault(run.c, faultAt);
    } finally {
      // It comes back as a replica of its promoted replica.
      group.resume(node);
    }
    check(report, 'primary paused', await run.stop(), faultAt);
  }, 60_000);
});
