import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { etcdSemaphorePrefix } from '../../lib/backends/etcd/etcd.keys';
import type { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { eventually } from '../support/eventually';
import { HolderProcess, type HolderMessage } from '../support/holder-harness';
import { etcdFixture } from './etcd-fixture';

/**
 * Native etcd semaphores (issue 17 for etcd): the permit layout, and the wake-ups a waiter needs.
 * Sessions here have a 30 s TTL, so a waiter's periodic re-read (every session TTL) cannot stand
 * in for a missing wake-up within the tests' 10 s waits: each grant below comes from a watch.
 */
describe('etcd backend: native semaphores', () => {
  const etcd = etcdFixture();

  const name = (what: string) => `sem:${what}:${randomBytes(4).toString('hex')}`;
  function engine(sessionTtl = 30_000) {
    const backend = new EtcdLockBackend({ client: etcd.client(), sessionTtl });
    return { engine: etcd.engine(backend, { ttl: sessionTtl, wait: 10_000 }), backend };
  }
  const permitKeys = async (n: string) => {
    const p = etcdSemaphorePrefix(n);
    return (
      await etcd.admin.kv.range({
        key: Buffer.from(p),
        range_end: Buffer.from(`${p.slice(0, -1)}0`),
        sort_order: 'Ascend',
        sort_target: 'Create',
      })
    ).kvs;
  };
  /** A waiting acquire whose key is on etcd (so the queue order is known). */
  async function queued(e: LockEngine, n: string, permits: number, count: number) {
    let granted: LockHandle | undefined;
    const p = e.acquire(n, { permits }).then((h) => (granted = h));
    await eventually(async () => (await permitKeys(n)).length === count);
    return { promise: p, granted: () => granted };
  }

  it('lays permits out under NAME%sem/<lease hex>_<owner> (value = permits), apart from the lock NAME/', async () => {
    const n = name('layout');
    const { engine: e, backend } = engine();
    const permit = await e.acquire(n, { permits: 3 });
    const lock = await e.acquire(n); // the lock of the same key is another thing: granted too
    const [kv] = await permitKeys(n);
    const hex = BigInt(backend.sessionLeaseId as string).toString(16);
    expect(kv.key.toString()).toMatch(new RegExp(`^${n}%sem/${hex}_[0-9a-f]{32}$`));
    expect(kv.value.toString()).toBe('3');
    expect(permit.fencingToken).toBe(BigInt(kv.create_revision));
    const lockKeys = await etcd.admin.getAll().prefix(`${n}/`).keys();
    expect(lockKeys).toEqual([`${n}/${hex}`]);
    const view = await backend.inspect(n);
    expect(view.holders.map((h) => h.metadata?.key)).toEqual([`${n}/${hex}`]);
    await lock.release();
    const semView = await backend.inspect(n);
    expect(semView).toMatchObject({ held: true, mode: 'exclusive', waiters: 0 });
    expect(semView.holders[0].metadata).toMatchObject({ permits: '3' });
    await permit.release();
    expect(await permitKeys(n)).toEqual([]);
  });

  it('a release by a holder that is not the oldest wakes the first waiter (it watches the whole prefix)', async () => {
    const n = name('younger-release');
    const [a, b, c] = [engine(), engine(), engine()];
    const older = await a.engine.acquire(n, { permits: 2 });
    const younger = await b.engine.acquire(n, { permits: 2 });
    const waiter = await queued(c.engine, n, 2, 3);
    expect(waiter.granted()).toBeUndefined();
    await younger.release();
    const h = await waiter.promise;
    expect(older.held).toBe(true);
    expect(h.fencingToken > younger.fencingToken).toBe(true);
    await Promise.all([older.release(), h.release()]);
  });

  it('a waiter behind a waiter becomes first when the one ahead is granted (the grant mark wakes it)', async () => {
    const n = name('mark');
    const [a, b, c, d] = [engine(), engine(), engine(), engine()];
    const first = await a.engine.acquire(n, { permits: 2 });
    const second = await b.engine.acquire(n, { permits: 2 });
    const third = await queued(c.engine, n, 2, 3);
    const fourth = await queued(d.engine, n, 2, 4);
    await first.release();
    const h3 = await third.promise; // C was first waiter; its grant marks its permit
    expect(fourth.granted()).toBeUndefined();
    await second.release(); // D must have moved on to watching the prefix: B is not its predecessor
    const h4 = await fourth.promise;
    expect(h3.held && h4.held).toBe(true);
    await Promise.all([h3.release(), h4.release()]);
  });

  it('a cancelled waiter ahead hands its place on; a try-once or timed-out request leaves no permit', async () => {
    const n = name('cancel');
    const [a, b, c] = [engine(), engine(), engine()];
    const holder = await a.engine.acquire(n, { permits: 1 + 1 });
    const other = await a.engine.acquire(n, { permits: 2 });
    const cancel = new AbortController();
    const ahead = b.engine.acquire(n, { permits: 2, signal: cancel.signal });
    await eventually(async () => (await permitKeys(n)).length === 3);
    const behind = await queued(c.engine, n, 2, 4);
    cancel.abort(new Error('changed my mind'));
    await expect(ahead).rejects.toThrow('changed my mind');
    await eventually(async () => (await permitKeys(n)).length === 3);
    await holder.release();
    const h = await behind.promise;
    expect(await b.engine.tryAcquire(n, { permits: 2 })).toBeNull();
    await expect(b.engine.acquire(n, { permits: 2, wait: 100 })).rejects.toMatchObject({
      name: 'LockAcquireTimeoutError',
    });
    expect((await permitKeys(n)).length).toBe(2);
    await Promise.all([other.release(), h.release()]);
  });

  it('forceRelease frees every permit that holds; their holders learn it', async () => {
    const n = name('force');
    const { engine: e, backend } = engine();
    const [s1, s2] = [await e.acquire(n, { permits: 2 }), await e.acquire(n, { permits: 2 })];
    const { engine: other } = engine();
    const waiting = other.acquire(n, { permits: 2 });
    await eventually(async () => (await permitKeys(n)).length === 3);
    expect(await backend.forceRelease(n)).toBe(true);
    expect(s1.signal.aborted && s2.signal.aborted).toBe(true);
    const h = await waiting;
    expect(h.held).toBe(true);
    await Promise.all([s1.release(), s2.release(), h.release()]);
  });

  it('several processes: at most N hold at once, and all N permits are used under load', async () => {
    const n = name('procs');
    const PERMITS = 3;
    const ROUNDS = 12;
    let inside = 0;
    let most = 0;
    let entries = 0;
    const atN: number[] = [];
    const tokens = new Set<string>();
    const workers = Array.from({ length: 4 }, () =>
      HolderProcess.start(join(__dirname, 'semaphore.process.ts'), [
        etcd.cluster.hosts().join(','),
        n,
        String(PERMITS),
        String(ROUNDS),
      ]),
    );
    for (const w of workers)
      w.child.on('message', (m: HolderMessage) => {
        if (m.type === 'enter') {
          entries++;
          tokens.add(m.token as string);
          most = Math.max(most, ++inside);
          if (inside === PERMITS) atN.push(entries);
        } else if (m.type === 'exit') {
          inside--;
          w.send({ type: 'ack', worker: m.worker });
        }
      });
    try {
      await Promise.all(workers.map((w) => w.next('done', 0, 200_000)));
    } finally {
      await Promise.all(workers.map((w) => w.kill()));
    }
    expect(entries).toBe(4 * 2 * ROUNDS);
    expect(tokens.size).toBe(entries); // a new permit, a new create revision, for every grant
    expect(most).toBe(PERMITS);
    expect(atN.length).toBeGreaterThan(0);
    expect(await permitKeys(n)).toEqual([]);
  }, 240_000); // four ts-node processes start slowly on a loaded machine
});
