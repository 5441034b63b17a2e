import { randomBytes } from 'node:crypto';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import type { LockInspection } from '../../lib/interfaces/lock-backend.interface';
import { untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { etcdFixture } from './etcd-fixture';

/**
 * Operator support (issue 15.4/15.5): inspect(key) reads holders and waiters from the lock's
 * prefix (create revision = fencing token), forceRelease(key) deletes the holder's key (the next
 * contender is granted; the holder sees the loss at its next renewal), ping() and sessionState
 * answer health checks. Against a private etcd, with each "process" on its own client.
 */
describe('etcd backend: inspect, forceRelease, ping', () => {
  const etcd = etcdFixture();
  const name = () => `ops:${randomBytes(4).toString('hex')}`;

  function backend() {
    const b = new EtcdLockBackend({ client: etcd.client(), sessionTtl: 2_000 });
    return { backend: b, engine: etcd.engine(b, { ttl: 2_000, wait: 20_000 }) };
  }

  it('inspect: free, then one holder with its lease and token and the waiters behind it', async () => {
    const key = name();
    const ops = backend().backend;
    expect(await ops.inspect(key)).toEqual({ key, held: false, holders: [], waiters: 0 });
    const a = backend();
    const held = await a.engine.acquire(key);
    const waiting = [backend().engine.acquire(key), backend().engine.acquire(key)];
    const view = (await eventually(async (): Promise<LockInspection | undefined> => {
      const v = await ops.inspect(key);
      return v.waiters === 2 ? v : undefined;
    })) as LockInspection;
    expect(view).toMatchObject({
      key,
      held: true,
      mode: 'exclusive',
      fencingToken: held.fencingToken,
    });
    expect(view.holders).toEqual([
      {
        mode: 'exclusive',
        metadata: expect.objectContaining({
          lease: BigInt(a.backend.sessionLeaseId as string).toString(16),
        }),
      },
    ]);
    await held.release();
    await Promise.all(waiting.map((w) => w.then((h) => h.release())));
  });

  it('inspect: shared holders, and a writer queued behind them waits', async () => {
    const key = name();
    const ops = backend().backend;
    const readers = [
      await backend().engine.acquire(key, { mode: 'shared' }),
      await backend().engine.acquire(key, { mode: 'shared' }),
    ];
    const writer = backend().engine.acquire(key);
    const view = (await eventually(async (): Promise<LockInspection | undefined> => {
      const v = await ops.inspect(key);
      return v.waiters === 1 ? v : undefined;
    })) as LockInspection;
    expect(view).toMatchObject({ held: true, mode: 'shared' });
    expect(view.holders.map((h) => h.mode)).toEqual(['shared', 'shared']);
    expect(view.fencingToken).toBe(readers[1].fencingToken);
    await Promise.all(readers.map((r) => r.release()));
    await (await writer).release();
  });

  it('forceRelease: the holder of another process loses its lock, the next waiter gets it with a larger token', async () => {
    const key = name();
    const ops = backend().backend;
    const held = await backend().engine.acquire(key);
    const next = backend().engine.acquire(key);
    await eventually(async () => (await ops.inspect(key)).waiters === 1);
    expect(await ops.forceRelease(key)).toBe(true);
    const granted = await next;
    expect(granted.fencingToken > held.fencingToken).toBe(true);
    expect(await untilAborted(held.signal, 10_000)).toMatchObject({ name: 'LockLostError' });
    expect(await ops.forceRelease(`${key}:free`)).toBe(false);
    await granted.release();
  });

  it('forceRelease on the holding backend itself: its handle learns at once', async () => {
    const key = name();
    const own = backend();
    const held = await own.engine.acquire(key);
    expect(await own.backend.forceRelease(key)).toBe(true);
    expect(held.signal.aborted).toBe(true);
    expect((await own.backend.inspect(key)).held).toBe(false);
  });

  it('ping and sessionState', async () => {
    const b = backend();
    expect(b.backend.sessionState).toBe('idle');
    await expect(b.backend.ping()).resolves.toBeUndefined();
    await (await b.engine.acquire(name())).release();
    expect(b.backend.sessionState).toBe('healthy');
    await b.engine.close();
    expect(b.backend.sessionState).toBe('closed');
  });
});
