import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { eventually } from '../support/eventually';
import { zooKeeperFixture } from './zookeeper-fixture';

/**
 * Queue discipline: contenders are granted in the order their nodes were created (the server's
 * sequence), and a release wakes exactly the one waiter that watches the released node: no herd.
 * Notifications are counted by each backend (stats.watchNotifications).
 */
const fx = zooKeeperFixture();
const { children } = fx;
const process = () => fx.open({}, { ttl: 10_000, wait: 20_000 });
const fresh = (name: string) => {
  const { key, path } = fx.fresh(name);
  return { key, dir: path };
};

it('waiters are granted in arrival order, across processes and within one process', async () => {
  const { key, dir } = fresh('fifo');
  const p1 = process();
  const p2 = process();
  const first = await p1.engine.acquire(key);
  const order: number[] = [];
  const waiting: Promise<void>[] = [];
  for (let i = 0; i < 6; i++) {
    const e = (i % 3 === 0 ? p1 : p2).engine; // several owners of one process queue as well
    waiting.push(
      e
        .runInScope(() => e.acquire(key))
        .then(async (h) => {
          order.push(i);
          await h.release();
        }),
    );
    await eventually(async () => (await children(dir)).length === i + 2); // arrival i is queued before i + 1 starts
  }
  await first.release();
  await Promise.all(waiting);
  expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  expect(await children(dir)).toEqual([]);
});

it('a release wakes at most two waiting writers: the next holder, and the waiter behind it, which moves up (watch notifications counted)', async () => {
  const { key, dir } = fresh('herd');
  const holder = process();
  const waiters = Array.from({ length: 5 }, () => process());
  const notifications = () =>
    waiters.reduce((sum, w) => sum + w.backend.stats.watchNotifications, 0);
  /** A round trip on every waiter's connection: ZooKeeper delivers a watch event before the answer to any later request. */
  const settle = () =>
    Promise.all(
      waiters.map((w) => w.engine.tryAcquire(fx.fresh('settle').key).then((h) => h?.release())),
    );
  let h: LockHandle = await holder.engine.acquire(key);
  const granted: Promise<LockHandle>[] = [];
  for (let i = 0; i < waiters.length; i++) {
    granted.push(waiters[i].engine.acquire(key));
    await eventually(async () => (await children(dir)).length === i + 2);
  }
  await settle();
  expect(notifications()).toBe(0);
  for (let i = 0; i < waiters.length; i++) {
    await h.release();
    h = await granted[i];
    await settle();
    // The next holder, granted on the event, and (while one remains) the waiter behind it, which
    // re-lists while the new holder holds: no herd, and no read on the handoff's path.
    expect(notifications()).toBe(i + 1 + Math.min(i + 1, waiters.length - 1));
  }
  await h.release();
  expect(await children(dir)).toEqual([]);
});

it('readers queued behind a writer all wake on its release and hold together; a later writer waits for all of them', async () => {
  const { key, dir } = fresh('readers');
  const writer = process();
  const readers = Array.from({ length: 4 }, () => process());
  const w = await writer.engine.acquire(key);
  const granted = readers.map((r) => r.engine.acquire(key, { mode: 'shared' }));
  await eventually(async () => (await children(dir)).length === 5);
  const lateWriter = writer.engine.runInScope(() => writer.engine.acquire(key));
  await eventually(async () => (await children(dir)).length === 6);
  await w.release();
  const held = await Promise.all(granted);
  expect(held.every((h) => h.held)).toBe(true);
  let lateGranted = false;
  void lateWriter.then(() => (lateGranted = true));
  expect(
    await writer.engine.tryAcquire(fx.fresh('probe').key).then((h) => h?.release()),
  ).toBeUndefined(); // a round trip
  expect(lateGranted).toBe(false);
  await Promise.all(held.map((h) => h.release()));
  await (await lateWriter).release();
  expect(await children(dir)).toEqual([]);
});

it('a waiter that times out or is cancelled deletes its node, and the waiter behind it moves up', async () => {
  const { key, dir } = fresh('giveup');
  const [holder, quitter, patient] = [process(), process(), process()];
  const h = await holder.engine.acquire(key);
  await expect(quitter.engine.acquire(key, { wait: 300 })).rejects.toBeInstanceOf(
    LockAcquireTimeoutError,
  );
  await eventually(async () => (await children(dir)).length === 1);

  const controller = new AbortController();
  const cancelled = quitter.engine.acquire(key, { wait: 20_000, signal: controller.signal });
  await eventually(async () => (await children(dir)).length === 2);
  const behind = patient.engine.acquire(key); // watches the quitter's node
  await eventually(async () => (await children(dir)).length === 3);
  const reason = new Error('caller gave up');
  controller.abort(reason);
  await expect(cancelled).rejects.toBe(reason);
  await eventually(async () => (await children(dir)).length === 2);
  await h.release();
  const next = await behind;
  expect(next.fencingToken > h.fencingToken).toBe(true);
  await next.release();
  expect(await children(dir)).toEqual([]);
});
