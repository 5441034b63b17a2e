import { LockEngine, MemoryLockBackend } from '../../../lib';

/**
 * Found by the torture harness (redis and memory runs, 8 workers on one key): a grant that came
 * after waiting longer than its ttl was lost the moment it was granted ("its ttl ran out before a
 * renewal was confirmed"), so the waiter's turn was wasted and busy keys starved waiters.
 * Cause: LockEngine dates the lease's validity from the start of the whole acquire call, wait
 * included, instead of from the start of the attempt that succeeded.
 */
describe('regression: a grant after a wait longer than the ttl', () => {
  it('is held (not lost) right after it is granted', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    try {
      const first = await engine.acquire('long-wait', { ttl: 200 });
      const waiter = engine.runInScope(() =>
        engine.acquire('long-wait', { ttl: 200, wait: 5_000 }),
      );
      // Hold past the waiter's ttl (renewed by the watchdog meanwhile), then hand over.
      await new Promise((r) => setTimeout(r, 400));
      await first.release();
      const second = await waiter;
      // Well inside the new grant's ttl (200 ms): a correct lease is still held here; the buggy one
      // was armed to expire at once and its watchdog tick has run by now.
      await new Promise((r) => setTimeout(r, 50));
      expect(second.signal.aborted).toBe(false);
      expect(second.held).toBe(true);
      await second.release();
    } finally {
      await engine.close();
    }
  });
});
