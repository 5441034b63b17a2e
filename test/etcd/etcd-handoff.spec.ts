import { randomBytes } from 'node:crypto';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { etcdFixture } from './etcd-fixture';

/**
 * The handoff path (issue 19): a waiter watches its predecessor from "now" (a synced watch: etcd
 * delivers the delete as it commits instead of at its next 100 ms catch-up of watches that start
 * in the past), and closes the gap between its read and its watch with one read. Regression: a
 * predecessor deleted inside that gap must still wake the waiter at once, not at the fallback
 * re-read (here 10 s, the session TTL, far beyond the 3 s wait).
 */
describe('etcd backend: handoff', () => {
  const etcd = etcdFixture();

  function engine(client = etcd.client()) {
    const backend = new EtcdLockBackend({ client, sessionTtl: 10_000 });
    return etcd.engine(backend, { ttl: 10_000, wait: 3_000 });
  }

  it("a predecessor deleted between the waiter's read and its watch still wakes the waiter at once", async () => {
    const key = `handoff:${randomBytes(4).toString('hex')}`;
    const holder = await engine().acquire(key);
    // The waiter's client: right after its create txn answers (it read the holder as its
    // predecessor), the holder releases; only then does the waiter go on to create its watch.
    const client = etcd.client();
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
