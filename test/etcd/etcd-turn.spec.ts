import { randomBytes } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { EtcdCluster } from '../support/etcd-server';
import { eventually } from '../support/eventually';

/**
 * The waiter's turn proven from one watch over the lock's range (issue 19, etcd.turn.ts): a waiter
 * with few older contenders is granted on the last one's delete event, with no read after it; and
 * a waiter whose own key goes while it waits (lease revoked) must not take that delete-free view
 * as its turn: it queues again, behind whoever queued meanwhile.
 */
describe('etcd backend: the turn watch', () => {
  let cluster: EtcdCluster;
  const clients: Etcd3[] = [];
  const engines: LockEngine[] = [];

  beforeAll(async () => {
    cluster = await EtcdCluster.start(1);
  });

  const keysOf = (n: string) => admin().getAll().prefix(`${n}/`).keys();
  let adminClient: Etcd3 | undefined;
  const admin = () => (adminClient ??= new Etcd3({ hosts: cluster.hosts() }));

  afterAll(async () => {
    adminClient?.close();
    await Promise.all(engines.map((e) => e.close()));
    for (const c of clients) c.close();
    await cluster?.destroy();
  });

  /** A client whose kv calls are counted (it forwards to the real client) and whose watches are seen. */
  function countingClient() {
    const client = new Etcd3({ hosts: cluster.hosts() });
    const stats = { calls: 0, inflight: 0, watches: 0 };
    for (const m of ['txn', 'range', 'deleteRange'] as const) {
      const real = (client.kv[m] as (...a: unknown[]) => Promise<unknown>).bind(client.kv);
      (client.kv as unknown as Record<string, unknown>)[m] = async (...args: unknown[]) => {
        stats.calls++;
        stats.inflight++;
        try {
          return await real(...args);
        } finally {
          stats.inflight--;
        }
      };
    }
    const watch = client.watch.bind(client);
    client.watch = () => {
      const builder = watch();
      const make = builder.watcher.bind(builder);
      builder.watcher = () => make().on('connected', () => stats.watches++);
      return builder;
    };
    return { client, stats };
  }

  function engine(client = new Etcd3({ hosts: cluster.hosts() })) {
    clients.push(client);
    const backend = new EtcdLockBackend({ client, sessionTtl: 10_000 });
    const e = new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 10_000, wait: 8_000 } });
    engines.push(e);
    return { engine: e, backend };
  }

  const name = (what: string) => `turn:${what}:${randomBytes(4).toString('hex')}`;

  it('the head waiter is granted on the holder delete event with no etcd request after it', async () => {
    const key = name('reads');
    const holder = await engine().engine.acquire(key);
    const { client, stats } = countingClient();
    const waiting = engine(client).engine.acquire(key);
    // The waiter has queued, its watch is live and its gap read (if any) answered.
    await eventually(() => stats.watches >= 1 && stats.inflight === 0);
    const before = stats.calls;
    await holder.release();
    const granted = await waiting;
    // The old path re-read its position here (one txn per handoff).
    expect(stats.calls - before).toBe(0);
    expect(granted.fencingToken > holder.fencingToken).toBe(true);
    await granted.release();
  });

  it('a waiter two places back is granted with no etcd request after its create: not when the holder goes, not when the next one does', async () => {
    const key = name('queue');
    const holder = await engine().engine.acquire(key);
    const second = engine().engine.acquire(key);
    await eventually(async () => (await keysOf(key)).length === 2);
    const { client, stats } = countingClient();
    const third = engine(client).engine.acquire(key);
    await eventually(
      async () => (await keysOf(key)).length === 3 && stats.watches >= 1 && stats.inflight === 0,
    );
    // Its create txn listed both older contenders; the lock's queue watch proves the rest.
    const before = stats.calls;
    await holder.release();
    const next = await second;
    await next.release();
    const last = await third;
    // The old path re-read its position when the holder's delete moved it up (one txn).
    expect(stats.calls - before).toBe(0);
    expect(last.fencingToken > next.fencingToken).toBe(true);
    await last.release();
  });

  it("a lock's queue watch outlives a wait: the next wait on it in the same process opens no new watch", async () => {
    const key = name('linger');
    const { client, stats } = countingClient();
    const waiter = engine(client).engine;
    for (let round = 0; round < 3; round++) {
      const holder = await engine().engine.acquire(key);
      const waiting = waiter.acquire(key);
      await eventually(async () => (await keysOf(key)).length === 2 && stats.inflight === 0);
      await holder.release();
      await (await waiting).release();
    }
    // One watch for the three waits (the old path opened one per wait).
    expect(stats.watches).toBe(1);
  });

  it.each([
    ['deleted by an operator', 'del'],
    ['deleted with its lease (revoked)', 'revoke'],
  ])(
    'a waiter whose key is %s while it waits never holds on it: it queues again, behind the waiter younger than its old key',
    async (_what, how) => {
      const key = name(how);
      const holder = await engine().engine.acquire(key);
      const { client, stats } = countingClient();
      const b = engine(client);
      let bHandle: LockHandle | undefined;
      const bWaiting = b.engine.acquire(key).then((h) => (bHandle = h));
      await eventually(() => stats.watches >= 1 && stats.inflight === 0);
      const cWaiting = engine().engine.acquire(key);
      await eventually(async () => (await keysOf(key)).length === 3);
      // B's key goes while A holds and C (younger than B's key) waits; then A releases at once.
      const lease = b.backend.sessionLeaseId as string;
      const bKey = `${key}/${BigInt(lease).toString(16)}`;
      if (how === 'del') await admin().delete().key(bKey);
      else await cluster.etcdctl('lease', 'revoke', BigInt(lease).toString(16));
      await holder.release();
      const cHandle = await cWaiting;
      // B saw every contender older than its old key go, but not as the oldest: its key was gone.
      // It queues again (a new key, younger than C's) instead of holding.
      await eventually(async () => {
        const mine = b.backend.sessionLeaseId;
        const res = await admin().getAll().prefix(`${key}/`).exec();
        return res.kvs.some(
          (kv) =>
            mine !== undefined &&
            kv.key.toString() === `${key}/${BigInt(mine).toString(16)}` &&
            BigInt(kv.create_revision) > cHandle.fencingToken,
        );
      });
      expect(bHandle).toBeUndefined();
      expect(cHandle.held).toBe(true);
      await cHandle.release();
      await bWaiting;
      const got = bHandle as LockHandle;
      expect(got.fencingToken > cHandle.fencingToken).toBe(true);
      await got.release();
    },
  );
});
