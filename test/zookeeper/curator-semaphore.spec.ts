import { hostname } from 'node:os';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { compileCuratorSemaphoreTool, CuratorSemaphoreTool } from './curator-semaphore-tool';
import { zooKeeperFixture } from './zookeeper-fixture';

/**
 * Interop with Apache Curator's InterProcessSemaphoreV2 (Debian's libcurator-recipes-java 5.4),
 * both directions: a Java program (compiled here with javac) takes leases on the same semaphore
 * paths as our native ZooKeeper semaphores (`permits`), so both share one pool of N. Keys made of
 * [A-Za-z0-9_:.-] map to identical node names: `lock:<key>` is `/locks/lock:<key>` for both.
 */
jest.setTimeout(120_000);

const LEASE = /^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-\d{10}$/;
const PARTICIPANT = `${hostname()}:${process.pid}`;

let curator: CuratorSemaphoreTool;
const fx = zooKeeperFixture({
  compile: compileCuratorSemaphoreTool,
  start: async (cs, classes) => (curator = await CuratorSemaphoreTool.start(classes, cs)),
});
const { children, data: dataOf } = fx;
const engine = () => fx.engine();
const remove = (path: string) =>
  new Promise<void>((resolve, reject) =>
    fx.admin.remove(path, -1, (e) => (e ? reject(e) : resolve())),
  );
/** A fresh semaphore per test: key `lock:<name>` for us, path `/locks/lock:<name>` for Curator. */
const fresh = (name: string) => {
  const { key, path } = fx.fresh(name);
  return { key, path, leases: `${path}/leases`, locks: `${path}/locks` };
};

describe('Curator interop (InterProcessSemaphoreV2)', () => {
  it('one pool of 3: Curator holds 2, ours gets the third; a fourth on either side waits until a lease is returned', async () => {
    const ours = engine();
    const s = fresh('pool');
    for (const id of ['a', 'b', 'c']) await curator.semaphore(id, s.path, 3);
    expect(await curator.acquire('a', 5_000)).toMatch(LEASE);
    expect(await curator.acquire('b', 5_000)).toMatch(LEASE);
    const third = await ours.acquire(s.key, { permits: 3, wait: 5_000 });

    // The same layout as Curator's: leases/_c_<uuid>-lease-<seq>, ours carrying the participant data.
    const leases = await children(s.leases);
    expect(leases).toHaveLength(3);
    for (const lease of leases) expect(lease).toMatch(LEASE);
    const data = await Promise.all(leases.map((l) => dataOf(`${s.leases}/${l}`)));
    expect(data.filter((d) => d === PARTICIPANT)).toHaveLength(1);

    // Full: a fourth is busy on both sides.
    expect(await ours.tryAcquire(s.key, { permits: 3 })).toBeNull();
    expect(await curator.acquire('c', 300)).toBeNull();

    // Ours waits (holding the `locks` mutex, its lease counted as the 4th) until Curator returns one.
    let granted = false;
    const waiting = ours
      .acquire(s.key, { permits: 3, wait: 20_000 })
      .then((h) => ((granted = true), h));
    await eventually(async () => (await children(s.locks)).length === 1);
    await eventually(async () => (await children(s.leases)).length === 4);
    expect(await curator.acquire('c', 200)).toBeNull(); // a round trip later, still waiting
    expect(granted).toBe(false);
    await curator.release('a');
    const fourth = await waiting;
    expect(fourth.held).toBe(true);
    expect(fourth.fencingToken).toBeGreaterThan(third.fencingToken);

    // Curator's waiter gets the permit our release frees.
    const curatorWaits = curator.acquire('c', 20_000);
    await eventually(async () => (await children(s.leases)).length === 4);
    await third.release();
    expect(await curatorWaits).toMatch(LEASE);
    await Promise.all([curator.release('b'), curator.release('c'), fourth.release()]);
    expect(await children(s.leases)).toEqual([]);
  });

  it('ours holds leases: Curator’s acquire with a timeout succeeds or fails as the count says; inspect and forceRelease see both', async () => {
    const [e1, e2] = [engine(), engine()];
    const s = fresh('count');
    await curator.semaphore('d', s.path, 3);
    await curator.semaphore('e', s.path, 3);
    const h1 = await e1.acquire(s.key, { permits: 3 });
    const h2 = await e2.acquire(s.key, { permits: 3 });
    expect(await curator.acquire('d', 5_000)).toMatch(LEASE); // 2 of 3 taken: the third is Curator's
    expect(await curator.acquire('e', 300)).toBeNull(); // 3 of 3
    expect(await children(s.leases)).toHaveLength(3);

    const view = await e1.backend().inspect!(`lock:${s.key}`);
    expect(view).toMatchObject({ held: true, mode: 'exclusive', waiters: 0 });
    expect(view.holders).toHaveLength(3);
    expect(view.holders.filter((h) => h.metadata?.data === PARTICIPANT)).toHaveLength(2);
    expect(view.fencingToken).toBeGreaterThan(h2.fencingToken);

    await h1.release();
    expect(await curator.acquire('e', 5_000)).toMatch(LEASE);
    expect(await e1.tryAcquire(s.key, { permits: 3 })).toBeNull();

    // An operator frees every permit, Curator's included; our holder learns it at once.
    expect(await e1.backend().forceRelease!(`lock:${s.key}`)).toBe(true);
    expect(await children(s.leases)).toEqual([]);
    expect(await untilAborted(h2.signal, 10_000)).toBeInstanceOf(LockLostError);
    await h2.release();
    await Promise.all([curator.release('d'), curator.release('e')]);
  });

  it('each participant counts against its own N (Curator’s rule)', async () => {
    const ours = engine();
    const s = fresh('own-n');
    await curator.semaphore('f', s.path, 2);
    await curator.semaphore('g', s.path, 2);
    await curator.semaphore('h', s.path, 3);
    expect(await curator.acquire('f', 5_000)).toMatch(LEASE);
    expect(await curator.acquire('g', 5_000)).toMatch(LEASE);
    expect(await ours.tryAcquire(s.key, { permits: 2 })).toBeNull(); // 2 held, our N is 2
    const mine = await ours.tryAcquire(s.key, { permits: 3 }); // 2 held, our N is 3
    expect(mine?.held).toBe(true);
    expect(await curator.acquire('h', 300)).toBeNull(); // 3 held, Curator's N is 3
    await mine!.release();
    expect(await curator.acquire('h', 5_000)).toMatch(LEASE);
    await Promise.all(['f', 'g', 'h'].map((id) => curator.release(id)));
  });

  it('mixed load of Curator and ours never has more than N inside, counted on ZooKeeper', async () => {
    const [e1, e2] = [engine(), engine()];
    const s = fresh('load');
    const permits = 3;
    const probe = `/probe-sem-${s.key}`;
    const javaIds = ['l1', 'l2', 'l3'];
    for (const id of javaIds) await curator.semaphore(id, s.path, permits);
    const rounds = 6;
    const holdMs = 150; // several grants long (a grant takes ~5 round trips through the `locks` mutex): the permits stay full
    let ourMost = 0;
    let mixed = 0; // rounds in which a Curator holder was inside with ours: one pool really shared
    const createProbe = () =>
      new Promise<string>((resolve, reject) =>
        fx.admin.mkdirp(probe, (e0) =>
          e0
            ? reject(e0)
            : fx.admin.create(`${probe}/ours-`, null, 3 /* EPHEMERAL_SEQUENTIAL */, (e, p) =>
                e ? reject(e) : resolve(p),
              ),
        ),
      );
    const java = Promise.all(javaIds.map((id) => curator.hammer(id, rounds, probe, holdMs)));
    const worker = async (e: LockEngine) => {
      for (let i = 0; i < rounds; i++) {
        await e.withLock(
          s.key,
          async () => {
            const mine = await createProbe();
            const inside = await children(probe);
            ourMost = Math.max(ourMost, inside.length);
            if (inside.some((c) => c.startsWith('in-'))) mixed++;
            await new Promise((r) => setTimeout(r, holdMs));
            await remove(mine);
          },
          { permits, wait: 60_000 },
        );
      }
    };
    await Promise.all([worker(e1), worker(e1), worker(e2), worker(e2)]);
    const javaMost = await java;
    for (const most of javaMost) expect(most).toBeLessThanOrEqual(permits);
    expect(ourMost).toBeLessThanOrEqual(permits);
    expect(Math.max(ourMost, ...javaMost)).toBe(permits); // all N permits were in use at some point
    expect(mixed).toBeGreaterThan(0);
    expect(await children(s.leases)).toEqual([]);
  });

  it('a lease deleted behind our back aborts our handle’s signal with LockLostError', async () => {
    const ours = engine();
    const s = fresh('deleted');
    const h: LockHandle = await ours.acquire(s.key, { permits: 2 });
    const [lease] = await children(s.leases);
    expect(lease).toMatch(LEASE);
    await remove(`${s.leases}/${lease}`);
    expect(await untilAborted(h.signal, 10_000)).toBeInstanceOf(LockLostError);
    expect(h.held).toBe(false);
    await h.release();
  });

  it('fencing tokens grow across grants even when `leases` is deleted and recreated (its sequence restarts)', async () => {
    const ours = engine();
    const s = fresh('fence');
    const first = await ours.acquire(s.key, { permits: 2 });
    const [firstNode] = await children(s.leases);
    await first.release();
    // The empty `leases` went with the last lease, `locks` with the mutex, then the semaphore path.
    const name = s.path.slice('/locks/'.length);
    await eventually(async () => !(await children('/locks')).includes(name));
    const second = await ours.acquire(s.key, { permits: 2 });
    const [secondNode] = await children(s.leases);
    // The server numbers the new directory's children from 0 again: the sequence is no fencing token.
    expect(secondNode.slice(-10)).toBe(firstNode.slice(-10));
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await second.release();
  });
});
