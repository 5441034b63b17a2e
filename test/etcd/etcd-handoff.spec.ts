import { randomBytes } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import { EtcdCluster } from '../support/etcd-server';

/**
 * The handoff path (issue 19): a waiter watches its predecessor from "now" (a synced watch: etcd
 * delivers the delete as it commits instead of at its next 100 ms catch-up of watches that start
 * in the past), and closes the gap between its read and its watch with one read. Regression: a
 * predecessor deleted inside that gap must still wake the waiter at once, not at the fallback
 * re-read (here 10 s, the session TTL, far beyond the 3 s wait).
 */
describe('etcd backend: handoff', () => {
  let cluster: EtcdCluster;
  const clients: Etcd3[] = [];
  const engines: LockEngine[] = [];

  beforeAll(async () => {
    cluster = await EtcdCluster.start(1);
  });

  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    for (const c of clients) c.close();
    await cluster?.destroy();
  });

  function engine(client = new Etcd3({ hosts: cluster.hosts() })) {
    clients.push(client);
    const e = new LockEngine({
      backend: new EtcdLockBackend({ client, sessionTtl: 10_000 }),
      keyPrefix: '',
      defaults: { ttl: 10_000, wait: 3_000 },
    });
    engines.push(e);
    return e;
  }

  it("a predecessor deleted between the waiter's read and its watch still wakes the waiter at once", async () => {
    const key = `handoff:${randomBytes(4).toString('hex')}`;
    const holder = await engine().acquire(key);
    // The waiter's client: right after its create txn answers (it read the holder as its
    // predecessor), the holder releases; only then does the waiter go on to create its watch.
    const client = new Etcd3({ hosts: cluster.hosts() });
    const txn = client.kv.txn.bind(client.kv);
    let gapMade = false;
    client.kv.txn = (async (...args: Parameters<typeof txn>) => {
      const res = await txn(...args);
      const creates = (args[0].success ?? []).some((op) => op.request_put);
      if (creates && !gapMade) {
        gapMade = true;
        await holder.release();
      }
      return res;
    }) as typeof client.kv.txn;
    const waiter = await engine(client).acquire(key, { wait: 3_000 });
    expect(gapMade).toBe(true);
    expect(waiter.fencingToken > holder.fencingToken).toBe(true);
    await waiter.release();
  });
});
