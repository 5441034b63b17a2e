import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { protectedId } from '../../lib/backends/zookeeper/zookeeper.nodes';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockInspection } from '../../lib/interfaces/lock-backend.interface';
import { untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { newZkClient, ZooKeeperServer } from '../support/zookeeper-server';

/**
 * Operator support (issue 15.4/15.5): inspect(key) lists the lock directory (Curator's predicates
 * pick the holders; czxid = fencing token), forceRelease(key) deletes the holder's node (its holder
 * sees the loss at once through its node watch; the next contender is granted), ping() is one
 * round trip. Against a private ZooKeeper, each "process" with its own session.
 */
let server: ZooKeeperServer;
const engines: LockEngine[] = [];
let n = 0;
const name = () => `ops-${++n}`;

function backend() {
  const b = new ZooKeeperLockBackend({
    clientFactory: () => newZkClient(server.connectionString, 5_000),
  });
  const e = new LockEngine({ backend: b, defaults: { ttl: 10_000, wait: 20_000 } });
  engines.push(e);
  return { backend: b, engine: e };
}

const viewWith = (b: ZooKeeperLockBackend, key: string, waiters: number) =>
  eventually(async () => {
    const v = await b.inspect(key);
    return v.waiters === waiters ? v : undefined;
  }) as Promise<LockInspection>;

beforeAll(async () => {
  server = await ZooKeeperServer.start();
});

afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await server?.destroy();
});

it('inspect: free, then the holder (node, protected id, czxid) and the waiters behind it', async () => {
  const key = name();
  const ops = backend().backend;
  expect(await ops.inspect(`lock:${key}`)).toEqual({
    key: `lock:${key}`,
    held: false,
    holders: [],
    waiters: 0,
  });
  const held = await backend().engine.acquire(key);
  const waiting = [backend().engine.acquire(key), backend().engine.acquire(key)];
  const view = await viewWith(ops, `lock:${key}`, 2);
  expect(view).toMatchObject({ held: true, mode: 'exclusive', fencingToken: held.fencingToken });
  expect(view.holders).toHaveLength(1);
  expect(view.holders[0].metadata?.node).toMatch(/^_c_.*-lock-\d{10}$/);
  expect(view.holders[0].metadata?.protectedId).toMatch(/^[0-9a-f-]{36}$/);
  await held.release();
  await Promise.all(waiting.map((w) => w.then((h) => h.release())));
});

it('inspect: shared holders, a writer queued behind them waits', async () => {
  const key = name();
  const ops = backend().backend;
  const readers = [
    await backend().engine.acquire(key, { mode: 'shared' }),
    await backend().engine.acquire(key, { mode: 'shared' }),
  ];
  const writer = backend().engine.acquire(key);
  const view = await viewWith(ops, `lock:${key}`, 1);
  expect(view).toMatchObject({ held: true, mode: 'shared', fencingToken: readers[1].fencingToken });
  expect(view.holders.map((h) => h.mode)).toEqual(['shared', 'shared']);
  await Promise.all(readers.map((r) => r.release()));
  await (await writer).release();
});

it('forceRelease: the holder sees the loss at once, the next waiter gets the lock with a larger token', async () => {
  const key = name();
  const ops = backend().backend;
  const held = await backend().engine.acquire(key);
  const next = backend().engine.acquire(key);
  await viewWith(ops, `lock:${key}`, 1);
  expect(await ops.forceRelease(`lock:${key}`)).toBe(true);
  expect(await untilAborted(held.signal, 10_000)).toMatchObject({ name: 'LockLostError' });
  const granted = await next;
  expect(granted.fencingToken > held.fencingToken).toBe(true);
  expect(await ops.forceRelease(`lock:${key}:free`)).toBe(false);
  await granted.release();
});

it('ping is one round trip; protected ids are our owner tokens laid out as UUIDs', async () => {
  const b = backend();
  await expect(b.backend.ping()).resolves.toBeUndefined();
  expect(b.backend.connectionState).toBe('connected');
  expect(protectedId('0123456789abcdef0123456789abcdef')).toBe(
    '01234567-89ab-cdef-0123-456789abcdef',
  );
});
