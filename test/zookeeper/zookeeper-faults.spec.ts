import { join } from 'node:path';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { lockDirectory } from '../../lib/backends/zookeeper/zookeeper.nodes';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { connectedZkClient, newZkClient, ZooKeeperServer } from '../support/zookeeper-server';
import { TcpProxy } from '../support/tcp-proxy';
import { HolderProcess } from '../support/holder-harness';

/**
 * Faults against a real standalone ZooKeeper: holders killed or stopped in their own process, a
 * connection cut past the session timeout, a create whose answer is lost, the server restarted
 * under held locks and queued waiters. Times to recovery are printed (measured, not asserted).
 */
jest.setTimeout(90_000);

const SHORT_SESSION_MS = 1_000;
let server: ZooKeeperServer;
let admin: ZooKeeperClientLike;
const engines: LockEngine[] = [];
const holders: HolderProcess[] = [];
const proxies: TcpProxy[] = [];
let n = 0;

function engine(
  connectionString: string,
  sessionTimeout: number,
  ttl = 30_000,
): { engine: LockEngine; backend: ZooKeeperLockBackend } {
  const backend = new ZooKeeperLockBackend({
    clientFactory: () => newZkClient(connectionString, sessionTimeout),
    sessionTimeout,
  });
  const e = new LockEngine({ backend, defaults: { ttl, wait: 20_000 } });
  engines.push(e);
  return { engine: e, backend };
}

const children = (path: string) =>
  new Promise<string[]>((resolve) => admin.getChildren(path, (e, c) => resolve(e ? [] : c)));
const fresh = (name: string) => {
  const key = `${name}-${++n}`;
  return { key, dir: lockDirectory('/locks', `lock:${key}`) };
};

beforeAll(async () => {
  server = await ZooKeeperServer.start();
  admin = await connectedZkClient(server.connectionString);
});

afterAll(async () => {
  await Promise.all(holders.map((h) => h.kill()));
  await Promise.all(engines.map((e) => e.close()));
  await Promise.all(proxies.map((p) => p.close()));
  admin?.close();
  await server?.destroy();
});

/** A fresh key held by a holder process (session SHORT_SESSION_MS), and an engine of ours to take it over. */
async function heldByAnotherProcess(name: string) {
  const { key } = fresh(name);
  const holder = HolderProcess.start(join(__dirname, 'holder.process.ts'), [
    server.connectionString,
    key,
    String(SHORT_SESSION_MS),
  ]);
  holders.push(holder);
  const token = BigInt((await holder.next('held', 0, 60_000)).token as string);
  const ours = engine(server.connectionString, SHORT_SESSION_MS).engine;
  return { key, holder, token, ours };
}

it('SIGKILL of the holder process: the lock frees after the session timeout, with a larger fencing token', async () => {
  const { key, holder, token, ours } = await heldByAnotherProcess('sigkill');
  expect(await ours.tryAcquire(key)).toBeNull();
  const started = performance.now();
  await holder.kill();
  const h = await ours.acquire(key, { wait: 20_000 });
  console.log(
    `zookeeper: lock of a SIGKILLed holder freed after ${Math.round(performance.now() - started)} ms (session timeout ${SHORT_SESSION_MS} ms)`,
  );
  expect(h.fencingToken > token).toBe(true);
  await h.release();
});

it('SIGSTOP of the holder: its session expires, the next owner gets a larger token, and after SIGCONT the holder learns it lost the lock', async () => {
  const { key, holder, token, ours } = await heldByAnotherProcess('sigstop');
  holder.stop();
  const h = await ours.acquire(key, { wait: 20_000 });
  expect(h.fencingToken > token).toBe(true);
  holder.cont();
  // It hears either the deletion of its node (queued before the server closed the connection) or the expiry itself.
  expect(String((await holder.next('lost')).reason)).toMatch(/session expired|node was deleted/);
  expect(h.held).toBe(true);
  await h.release();
  await holder.kill();
});

it('a connection cut longer than the session timeout: in doubt first, then the signal aborts; a fresh session serves later acquires', async () => {
  const proxy = await TcpProxy.start({ port: server.port });
  proxies.push(proxy);
  const { engine: cut, backend } = engine(proxy.connectionString, SHORT_SESSION_MS, 60_000);
  const other = engine(server.connectionString, SHORT_SESSION_MS).engine;
  const { key } = fresh('cut');
  const h = await cut.acquire(key);
  proxy.drop();
  await eventually(() => backend.inDoubt);
  expect(backend.connectionState).toBe('disconnected');
  const reason = await untilAborted(h.signal, 20_000);
  expect(reason).toBeInstanceOf(LockLostError);
  expect((reason as Error).message).toMatch(/session timeout \(1000 ms\)/);
  const next = await other.acquire(key, { wait: 20_000 });
  expect(next.fencingToken > h.fencingToken).toBe(true);
  await h.release(); // a lost handle's release is harmless
  proxy.heal();
  // The old client reconnects, hears EXPIRED; the backend opens a new session from clientFactory.
  await next.release();
  const again = await cut.acquire(key, { wait: 20_000 });
  expect(backend.stats.sessions).toBe(2);
  expect(again.fencingToken > next.fencingToken).toBe(true);
  await again.release();
});

it('a create whose answer was lost is found again by its _c_<uuid>- prefix: one node, no orphan', async () => {
  const proxy = await TcpProxy.start({ port: server.port });
  proxies.push(proxy);
  const { engine: e, backend } = engine(proxy.connectionString, 8_000);
  const { key, dir } = fresh('lostcreate');
  await (await e.acquire(`warm-up-${key}`)).release(); // session up
  await new Promise<void>((resolve, reject) =>
    admin.mkdirp(dir, (error) => (error ? reject(error) : resolve())),
  );
  proxy.blackhole('replies');
  const acquiring = e.acquire(key, { wait: 20_000 });
  const created = await eventually(async () => {
    const list = await children(dir);
    return list.length === 1 ? list[0] : undefined;
  });
  proxy.drop(); // the create happened; its answer dies with the connection (CONNECTION_LOSS)
  proxy.heal();
  const h = await acquiring;
  expect(backend.stats.sessions).toBe(1); // same session: the node is still ours
  expect(await children(dir)).toEqual([created]);
  await h.release();
  expect(await children(dir)).toEqual([]);
});

it('server restart with a holder and two queued waiters: sessions survive, grants stay in order, no double grant, no orphan node', async () => {
  const { key, dir } = fresh('restart');
  const procs = [0, 1, 2, 3].map(() => engine(server.connectionString, 8_000));
  const [a, b, c, d] = procs.map((p) => p.engine);
  const first = await a.acquire(key);
  let active = 1;
  let maxActive = 1;
  const order: string[] = [];
  const waiter = (e: LockEngine, name: string) =>
    e.acquire(key, { wait: 60_000 }).then((h) => {
      maxActive = Math.max(maxActive, ++active);
      order.push(name);
      return h;
    });
  const second = waiter(b, 'b');
  await eventually(async () => (await children(dir)).length === 2);
  const third = waiter(c, 'c');
  await eventually(async () => (await children(dir)).length === 3);
  expect(await d.tryAcquire(key)).toBeNull();

  const started = performance.now();
  await server.kill();
  await server.start();
  // Every client finds its old session again (the server restores sessions from its snapshot/log).
  await eventually(() => procs.every((p) => p.backend.connectionState === 'connected'), 20_000, 20);
  console.log(
    `zookeeper: server restart -> all 4 clients back on their sessions after ${Math.round(performance.now() - started)} ms`,
  );
  expect(procs.map((p) => p.backend.stats.sessions)).toEqual([1, 1, 1, 1]);
  admin.close(); // the bookkeeping client is a bare driver client, without the backend's handshake watch: use a new one
  admin = await connectedZkClient(server.connectionString);
  expect(await d.tryAcquire(key)).toBeNull();
  expect(first.held).toBe(true);
  expect(order).toEqual([]);

  active--;
  await first.release();
  const h2 = await second;
  active--;
  await h2.release();
  const h3 = await third;
  active--;
  await h3.release();
  expect(order).toEqual(['b', 'c']);
  expect(maxActive).toBe(1);
  expect(h2.fencingToken > first.fencingToken && h3.fencingToken > h2.fencingToken).toBe(true);
  await eventually(async () => (await children(dir)).length === 0);
});

it('with only a user client (no clientFactory), an expired session makes acquires fail clearly, never hang', async () => {
  const proxy = await TcpProxy.start({ port: server.port });
  proxies.push(proxy);
  const client = await connectedZkClient(proxy.connectionString, SHORT_SESSION_MS);
  const backend = new ZooKeeperLockBackend({ client });
  const e = new LockEngine({ backend, defaults: { ttl: 60_000, wait: 5_000 } });
  engines.push(e);
  const { key, dir } = fresh('userclient');
  const h = await e.acquire(key);
  proxy.drop();
  expect(await untilAborted(h.signal, 20_000)).toBeInstanceOf(LockLostError);
  await eventually(async () => (await children(dir)).length === 0, 20_000); // the server expired the session
  proxy.heal();
  await eventually(() => backend.connectionState === 'expired', 20_000);
  await expect(e.acquire(key, { wait: 1_000 })).rejects.toMatchObject({
    name: 'LockBackendUnavailableError',
    message: expect.stringMatching(/clientFactory/),
  });
  await h.release();
  client.close();
});
