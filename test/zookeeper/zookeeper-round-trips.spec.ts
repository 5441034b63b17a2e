import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { lockDirectory } from '../../lib/backends/zookeeper/zookeeper.nodes';
import { LockEngine } from '../../lib/core/lock-engine';
import { eventually } from '../support/eventually';
import { connectedZkClient, fourLetter, ZooKeeperServer } from '../support/zookeeper-server';

/**
 * What a lock costs ZooKeeper, counted: transactions from the server's own zxid (a failed write,
 * NODE_EXISTS or NOT_EMPTY, is logged like any other), requests from a wrapper around the driver
 * that forwards every call and can hold back the answers to getData.
 */
let server: ZooKeeperServer;
let admin: ZooKeeperClientLike;
const clients: ZooKeeperClientLike[] = [];
const engines: LockEngine[] = [];
let n = 0;

beforeAll(async () => {
  server = await ZooKeeperServer.start();
  admin = await connectedZkClient(server.connectionString, 5_000);
  clients.push(admin);
});

afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  for (const c of clients) c.close();
  await server?.destroy();
});

interface Counted {
  sent: number;
  answered: number;
  /** While true, getData answers are held back until release(). */
  gate: boolean;
  held: (() => void)[];
}

async function process(): Promise<{ engine: LockEngine; stats: Counted }> {
  const client = await connectedZkClient(server.connectionString, 5_000);
  clients.push(client);
  const stats: Counted = { sent: 0, answered: 0, gate: false, held: [] };
  const methods = ['create', 'remove', 'exists', 'getData', 'getChildren'] as const;
  for (const m of methods) {
    const real = (client[m] as (...a: unknown[]) => void).bind(client);
    (client as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => {
      stats.sent++;
      const callback = args[args.length - 1] as (...r: unknown[]) => void;
      args[args.length - 1] = (...result: unknown[]) => {
        stats.answered++;
        if (m === 'getData' && stats.gate) stats.held.push(() => callback(...result));
        else callback(...result);
      };
      real(...args);
    };
  }
  const backend = new ZooKeeperLockBackend({ client });
  const engine = new LockEngine({ backend, defaults: { ttl: 10_000, wait: 10_000 } });
  engines.push(engine);
  return { engine, stats };
}

const zxid = async () =>
  BigInt(`0x${/Zxid: 0x([0-9a-f]+)/.exec(await fourLetter(server.port, 'srvr'))?.[1] ?? '0'}`);

const childrenOf = (path: string) =>
  new Promise<string[]>((resolve) => admin.getChildren(path, (e, c) => resolve(e ? [] : c)));

const fresh = (what: string) => {
  const key = `rt-${what}-${++n}`;
  return { key, dir: lockDirectory('/locks', `lock:${key}`) };
};

/** Every request of `stats` answered (and nothing held back). */
const quiet = (stats: Counted) => eventually(() => stats.answered === stats.sent);

it('a handoff costs the holder its delete and its queueing again its create: two transactions, no NODE_EXISTS or NOT_EMPTY', async () => {
  const { key, dir } = fresh('txns');
  const a = await process();
  const b = await process();
  let held = await a.engine.acquire(key);
  const queued = b.engine.acquire(key);
  await eventually(async () => (await childrenOf(dir)).length === 2);
  await quiet(a.stats);
  const before = await zxid();
  await held.release();
  const bHolds = await queued;
  const again = a.engine.acquire(key);
  await eventually(async () => (await childrenOf(dir)).length === 2);
  await quiet(a.stats);
  // The old path also logged a NOT_EMPTY delete of the directory and a NODE_EXISTS create of it.
  expect(await zxid()).toBe(before + 2n);
  await bHolds.release();
  held = await again;
  await held.release();
});

it("the first waiter is granted on its predecessor's delete event after one read of its own node, no listing", async () => {
  const { key, dir } = fresh('turn');
  const a = await process();
  const b = await process();
  const held = await a.engine.acquire(key);
  const queued = b.engine.acquire(key);
  await eventually(async () => (await childrenOf(dir)).length === 2);
  await quiet(b.stats);
  const before = b.stats.sent;
  await held.release();
  const granted = await queued;
  // The old path listed the directory again here. The one read left is of our own node: the
  // event says nothing of when the server last heard from our session, the read's send time does
  // (the grant's validity counts from it).
  expect(b.stats.sent - before).toBe(1);
  expect(granted.fencingToken > held.fencingToken).toBe(true);
  await granted.release();
});

/** The czxid of `dir`'s one child, as the fencing token it should be. */
async function onlyNodeCzxid(dir: string): Promise<bigint> {
  const [node] = await childrenOf(dir);
  const stat = await new Promise<{ czxid: Buffer }>((resolve, reject) =>
    admin.exists(`${dir}/${node}`, (e, s) => (e || !s ? reject(e) : resolve(s as never))),
  );
  return BigInt(`0x${stat.czxid.toString('hex')}`);
}

/**
 * Acquires `key` with every getData answer held back (a read of our node could not answer): true
 * when the grant came from the create and the listing alone, and its token is our node's czxid.
 */
async function grantedWithoutRead(
  a: { engine: LockEngine; stats: Counted },
  key: string,
  dir: string,
) {
  a.stats.gate = true; // answers to getData (our node's watch) wait
  let granted = false;
  const acquiring = a.engine.acquire(key).then((h) => {
    granted = true;
    return h;
  });
  // Every request of the acquire answered but getData's: let the answers run to their end.
  await eventually(() => a.stats.answered === a.stats.sent);
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  const withoutRead = granted;
  a.stats.gate = false;
  for (const answer of a.stats.held.splice(0)) answer();
  const handle = await acquiring;
  expect(handle.fencingToken).toBe(await onlyNodeCzxid(dir));
  await handle.release();
  return withoutRead;
}

it("a free lock is granted from its create and the directory's listing, and its token is its node's czxid", async () => {
  const { key, dir } = fresh('free');
  const a = await process();
  await a.engine.tryAcquire(fresh('warm').key).then((h) => h?.release());
  await quiet(a.stats);
  // The old path waited for a read of our node (its czxid) before the grant.
  expect(await grantedWithoutRead(a, key, dir)).toBe(true);
});

it("a kept directory's lock is granted from its create and listing too, with its node's czxid as token", async () => {
  const { key, dir } = fresh('kept');
  const a = await process();
  const other = await process();
  // Children created and deleted before: the sequence suffix no longer tells the cversion.
  await (await other.engine.acquire(key)).release();
  await (await a.engine.acquire(key)).release();
  await quiet(a.stats);
  // Before, a kept directory cost a read of our node (its czxid) before the grant.
  expect(await grantedWithoutRead(a, key, dir)).toBe(true);
});

it("a change by another process between our last listing and our listing costs the read: the token is still our node's czxid", async () => {
  const { key, dir } = fresh('raced');
  const a = await process();
  const other = await process();
  await (await a.engine.acquire(key)).release();
  await quiet(a.stats);
  // Two changes a knows nothing of: its last listing is two cversions behind before its create.
  await (await other.engine.acquire(key)).release();
  const before = a.stats.sent;
  const handle = await a.engine.acquire(key);
  expect(handle.fencingToken).toBe(await onlyNodeCzxid(dir));
  // create, listing, then the read of our node (with its watch)
  await quiet(a.stats);
  expect(a.stats.sent - before).toBe(3);
  await handle.release();
});

const exists = (path: string) =>
  new Promise<boolean>((resolve, reject) =>
    admin.exists(path, (e, s) => (e ? reject(e) : resolve(Boolean(s)))),
  );

it("a hot key's uncontended cycle costs its node's create and delete: two transactions, the directory stays", async () => {
  const { key, dir } = fresh('hot');
  const a = await process();
  await (await a.engine.acquire(key)).release();
  await quiet(a.stats);
  const before = await zxid();
  for (let i = 0; i < 3; i++) await (await a.engine.acquire(key)).release();
  await quiet(a.stats);
  // The old path also deleted the empty directory after each release and made it again before the
  // next create: four transactions a cycle.
  expect(await zxid()).toBe(before + 6n);
  expect(await exists(dir)).toBe(true);
});

it('a directory left empty is deleted once unused for a while, and a later acquire makes it again', async () => {
  const { key, dir } = fresh('idle');
  const a = await process();
  await (await a.engine.acquire(key)).release();
  await eventually(async () => !(await exists(dir)), 20_000);
  const again = await a.engine.acquire(key);
  expect(await childrenOf(dir)).toHaveLength(1);
  await again.release();
});

it('a closing backend deletes its empty directories at once', async () => {
  const { key, dir } = fresh('closing');
  const a = await process();
  await (await a.engine.acquire(key)).release();
  await quiet(a.stats);
  expect(await exists(dir)).toBe(true);
  await a.engine.close();
  await eventually(async () => !(await exists(dir)));
});

it('a waiter that times out queues once and at its deadline only deletes its node: the engine sends nothing more for it', async () => {
  const { key, dir } = fresh('timeout');
  const a = await process();
  const b = await process();
  const held = await a.engine.acquire(key);
  await (await b.engine.acquire(fresh('warm').key)).release(); // b's session and first requests
  await quiet(b.stats);
  const before = b.stats.sent;
  await expect(b.engine.acquire(key, { wait: 300 })).rejects.toMatchObject({
    code: 'LOCK_ACQUIRE_TIMEOUT',
  });
  await eventually(async () => (await childrenOf(dir)).length === 1);
  await quiet(b.stats);
  // The directory's create (new to b) and our node's, the listing; the watches on our node and on
  // the holder's; then at the deadline (the engine's last attempt finds no watch event: nothing
  // sent) the leave: our node's delete and the directory's listing, as a release sends them.
  expect(b.stats.sent - before).toBe(7);
  await held.release();
});
