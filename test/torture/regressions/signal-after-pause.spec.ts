import { LockEngine, MemoryLockBackend } from '../../../lib';

/**
 * Found by the torture harness (pause fault: SIGSTOP a holder for longer than its ttl, then
 * SIGCONT): when the holder's code resumed before the watchdog's timer, `handle.signal` was not yet
 * aborted and `handle.held` was still true, although the lease's validity had ended during the
 * pause; the holder wrote with an expired lock and only the resource's fencing refused the write.
 * A blocked event loop is what a paused process (SIGSTOP, a long GC pause) looks like from inside.
 */
function blockFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: nothing else in this process runs, as under SIGSTOP
  }
}

describe('regression: a holder resuming after a pause longer than its ttl', () => {
  it('sees its signal aborted (and held false) before it can write', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    try {
      const handle = await engine.acquire('paused', { ttl: 100 });
      blockFor(250);
      expect(handle.held).toBe(false);
      expect(handle.signal.aborted).toBe(true);
      expect(() => handle.throwIfLost()).toThrow(/lost/);
      await handle.release();
    } finally {
      await engine.close();
    }
  });
});
