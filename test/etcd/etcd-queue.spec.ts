import { randomBytes } from 'node:crypto';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { CrashableBackend, MutexProbe, untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { etcdFixture } from './etcd-fixture';

/**
 * Queueing on etcd: FIFO by create revision across processes and by arrival within one; owners of
 * one process sharing one session key; no writer starvation; a revoked session; loopback latency.
 */
describe('etcd backend: queueing, sessions and latency (single node)', () => {
  const etcd = etcdFixture();

  const name = (what: string) => `queue:${what}:${randomBytes(4).toString('hex')}`;
  function engine(sessionTtl = 2_000) {
    const inner = new EtcdLockBackend({ client: etcd.client(), sessionTtl });
    const backend = new CrashableBackend(inner);
    const e = etcd.engine(backend, { ttl: sessionTtl, wait: 20_000 });
    return { engine: e, backend, inner };
  }
  const contenders = async (n: string) => (await etcd.admin.getAll().prefix(`${n}/`).keys()).length;

  it('FIFO across processes: waiters are granted in the order they queued', async () => {
    const n = name('fifo');
    const holder = engine();
    const first = await holder.engine.acquire(n);
    const order: number[] = [];
    const tokens: bigint[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      const { engine: e } = engine();
      waiters.push(e.withLock(n, (h) => void (order.push(i), tokens.push(h.fencingToken))));
      await eventually(async () => (await contenders(n)) === i + 2);
    }
    await first.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
  });

  it('FIFO within one process: owners queue locally through one session key, each grant a new key and a larger token', async () => {
    const n = name('local');
    const { engine: e, backend } = engine();
    const first = await e.acquire(n);
    const order: number[] = [];
    const tokens: bigint[] = [first.fencingToken];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      waiters.push(
        e.withLock(n, async (h) => {
          order.push(i);
          tokens.push(h.fencingToken);
          expect(await contenders(n)).toBe(1);
        }),
      );
      await eventually(() => backend.acquireCalls === i + 2);
    }
    // Local waiters do not queue on etcd: ours is still the only key.
    expect(await contenders(n)).toBe(1);
    await first.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
  });

  it('shared owners of one process share one key and one token', async () => {
    const n = name('share');
    const { engine: e } = engine();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const readers = [0, 1, 2].map(() =>
      e.withLock(
        n,
        async (h) => {
          await gate;
          return h.fencingToken;
        },
        { mode: 'shared', wait: 0 },
      ),
    );
    await eventually(() => e.heldCount === 3);
    expect(await contenders(n)).toBe(1);
    open();
    const tokens = await Promise.all(readers);
    expect(new Set(tokens).size).toBe(1);
    expect(await contenders(n)).toBe(0);
  });

  it('a queued writer is not starved: later readers, local or remote, queue behind it', async () => {
    const n = name('starve');
    const [a, b, c] = [engine(), engine(), engine()];
    const r1 = await a.engine.acquire(n, { mode: 'shared' });
    let written = false;
    const writer = b.engine.acquire(n).then((h) => ((written = true), h));
    await eventually(async () => (await contenders(n)) === 2);
    expect(await a.engine.tryAcquire(n, { mode: 'shared' })).toBeNull();
    expect(await c.engine.tryAcquire(n, { mode: 'shared' })).toBeNull();
    expect(written).toBe(false);
    await r1.release();
    const w = await writer;
    expect(w.fencingToken > r1.fencingToken).toBe(true);
    await w.release();
  });

  it('a cancelled or timed-out waiter deletes its key', async () => {
    const n = name('residue');
    const [a, b] = [engine(), engine()];
    const h = await a.engine.acquire(n);
    await expect(b.engine.acquire(n, { wait: 300 })).rejects.toMatchObject({
      code: 'LOCK_ACQUIRE_TIMEOUT',
    });
    expect(await contenders(n)).toBe(1);
    const controller = new AbortController();
    const waiting = b.engine.acquire(n, { signal: controller.signal });
    await eventually(async () => (await contenders(n)) === 2);
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    await eventually(async () => (await contenders(n)) === 1);
    await h.release();
  });

  it('a revoked session lease: every lock held through it is lost at once, and later acquires get a new session', async () => {
    const { engine: e, inner } = engine(10_000);
    const handles = await Promise.all(
      [name('rev1'), name('rev2')].map((n) => e.acquire(n, { ttl: 10_000 })),
    );
    const lease = inner.sessionLeaseId as string;
    await etcd.cluster.etcdctl('lease', 'revoke', BigInt(lease).toString(16));
    const reasons = await Promise.all(handles.map((h) => untilAborted(h.signal, 15_000)));
    for (const r of reasons) expect(r).toBeInstanceOf(LockLostError);
    const after = await e.acquire(name('rev3'));
    expect(inner.sessionLeaseId).toBeDefined();
    expect(inner.sessionLeaseId).not.toBe(lease);
    await after.release();
  });

  it('churn: 3 processes x 4 owners with random modes, deadlines and cancels never overlap a writer and leave no key behind', async () => {
    const n = name('churn');
    const procs = [engine(), engine(), engine()];
    const probe = new MutexProbe();
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let granted = 0;
    let refused = 0;
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (async () => {
          const e = procs[i % 3].engine;
          for (let r = 0; r < 8; r++) {
            const mode = random() < 0.5 ? 'shared' : 'exclusive';
            const wait = [0, 30, 5_000][Math.floor(random() * 3)];
            const controller = new AbortController();
            if (random() < 0.2)
              setTimeout(() => controller.abort(new Error('cancelled')), random() * 20);
            try {
              await e.withLock(n, () => probe.section(mode), {
                mode,
                wait,
                signal: controller.signal,
              });
              granted++;
            } catch (error) {
              if (
                (error as { code?: string }).code !== 'LOCK_ACQUIRE_TIMEOUT' &&
                (error as Error).message !== 'cancelled'
              )
                throw error;
              refused++;
            }
          }
        })(),
      ),
    );
    console.log(`etcd churn: ${granted} grants, ${refused} timeouts/cancels`);
    expect(probe.writerOverlaps).toBe(0);
    expect(granted).toBeGreaterThan(0);
    await eventually(async () => (await contenders(n)) === 0);
  });

  it('loopback latency: uncontended acquire/release and handoff between processes (reported, not asserted)', async () => {
    const n = name('latency');
    const [a, b] = [engine(), engine()];
    const acquire: number[] = [];
    const release: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      const h = await a.engine.acquire(n);
      const t1 = performance.now();
      await h.release();
      acquire.push(t1 - t0);
      release.push(performance.now() - t1);
    }
    const handoff: number[] = [];
    let last = 0n;
    let held: LockHandle = await a.engine.acquire(n);
    for (let i = 0; i < 100; i++) {
      const next = (i % 2 ? a : b).engine;
      const waiting = next.acquire(n);
      await eventually(async () => (await contenders(n)) === 2, 10_000, 2);
      const t0 = performance.now();
      await held.release();
      held = await waiting;
      handoff.push(performance.now() - t0);
      expect(held.fencingToken > last).toBe(true);
      last = held.fencingToken;
    }
    await held.release();
    const stats = (xs: number[]) => {
      const s = [...xs].sort((x, y) => x - y);
      const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(2);
      return `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`;
    };
    console.log(
      `etcd latency (single node, loopback): acquire ${stats(acquire)}; release ${stats(release)}; handoff (release -> waiter granted) ${stats(handoff)}`,
    );
    expect(acquire).toHaveLength(200);
  });
});
