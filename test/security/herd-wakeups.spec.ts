import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { BackendAttempt } from '../../lib/interfaces/lock-backend.interface';
import { eventually } from '../support/eventually';

/**
 * Issue 14.4: a release woke every waiter of the key: 100 / 200 / 400 waiters cost 5k / 20k / 81k
 * attempts (quadratic). With the core's local FIFO line only the head attempts, and after a local
 * grant the next head waits for the release before attempting: one attempt per handoff, whatever
 * the number of waiters (it was 2 before handoffs: the new head's first attempt always found it busy).
 */
async function attemptsPerHandoff(waiters: number): Promise<number> {
  const backend = new MemoryLockBackend();
  let attempts = 0;
  const tryAcquire = backend.tryAcquire.bind(backend);
  backend.tryAcquire = (request: BackendAttempt) => {
    attempts++;
    return tryAcquire(request);
  };
  const engine = new LockEngine({ backend, defaults: { wait: 60_000, ttl: 60_000 } });
  const holder = await engine.acquire('herd');
  let inside = 0;
  let maxInside = 0;
  const runs = Array.from({ length: waiters }, () =>
    engine.withLock('herd', async () => {
      maxInside = Math.max(maxInside, ++inside);
      await new Promise((r) => setImmediate(r));
      inside--;
    }),
  );
  await eventually(() => attempts >= 2); // the head of the line has tried once and sleeps
  const before = attempts;
  await holder.release();
  await Promise.all(runs);
  await engine.close();
  expect(maxInside).toBe(1);
  return (attempts - before) / waiters;
}

describe('wake-ups per handoff are O(1) on the memory backend (issue 14.4)', () => {
  it('100 / 200 / 400 waiters: about one attempt per handoff, not one per waiter', async () => {
    const per: number[] = [];
    for (const n of [100, 200, 400]) per.push(await attemptsPerHandoff(n));
    // One attempt per handoff: the next head waits for the release instead of first trying in vain.
    for (const p of per) expect(p).toBeLessThanOrEqual(1.1);
    expect(per[2]).toBeLessThanOrEqual(per[0] * 1.1);
    console.log(
      `attempts per handoff for 100/200/400 waiters: ${per.map((p) => p.toFixed(2)).join(' / ')}`,
    );
  }, 60_000);
});
