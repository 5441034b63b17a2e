import { zooKeeperFixture } from './zookeeper-fixture';

/**
 * ZooKeeper semaphore: two concurrent tryAcquire(k, { permits: 2 }) on a free semaphore granted
 * only one. The second found the `locks` mutex held for a moment by the first and answered busy,
 * with a permit free. A try that finds the mutex busy now counts the leases without it (a lease
 * counts every node created before its listing, so the bound holds without the mutex).
 */
const fx = zooKeeperFixture();

describe('ZooKeeper semaphore tryAcquire', () => {
  it('two concurrent tryAcquire with permits 2 on a free semaphore both get a permit', async () => {
    const [a, b] = [fx.engine(), fx.engine()];
    for (let round = 0; round < 3; round++) {
      const { key } = fx.fresh('try2');
      const both = await Promise.all([
        a.tryAcquire(key, { permits: 2 }),
        b.tryAcquire(key, { permits: 2 }),
      ]);
      expect(both.map((h) => h !== null)).toEqual([true, true]);
      // A third finds the semaphore full.
      expect(await a.tryAcquire(key, { permits: 2 })).toBeNull();
      await Promise.all(both.map((h) => h?.release()));
    }
  });

  it('concurrent tryAcquire never grants more than permits', async () => {
    const engines = [fx.engine(), fx.engine(), fx.engine()];
    const { key } = fx.fresh('try-bound');
    const got = await Promise.all(
      engines.flatMap((e) => [
        e.tryAcquire(key, { permits: 2 }),
        e.tryAcquire(key, { permits: 2 }),
      ]),
    );
    const held = got.filter((h) => h !== null);
    expect(held.length).toBeGreaterThanOrEqual(1);
    expect(held.length).toBeLessThanOrEqual(2);
    await Promise.all(held.map((h) => h?.release()));
  });
});
