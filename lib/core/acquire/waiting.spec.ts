import { MemoryLockBackend } from '../../backends/memory/memory.backend';
import type { BackendAcquireResult, BackendAttempt } from '../../interfaces/lock-backend.interface';
import { LockEngine } from '../lock-engine';

/**
 * A memory backend whose tryAcquire answers are held back until the test lets them through, in
 * any order: what a network backend does when two attempts are in flight (a small SQL pool).
 */
class GatedBackend extends MemoryLockBackend {
  readonly pending: { owner: string; let: () => void }[] = [];
  gated = true;
  override async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    if (this.gated)
      await new Promise<void>((r) => this.pending.push({ owner: request.owner, let: r }));
    return super.tryAcquire(request);
  }
}

const settle = () => new Promise((r) => setImmediate(r));

describe('AcquireRunner: the local line', () => {
  // Regression: "try once before joining the line when nobody of this process is queued"
  // let a second arrival attempt while the first's attempt was still in flight; answered out of
  // order, the later arrival got the lock first.
  it('an arrival while the head of an empty line is still attempting queues behind it, whatever order the answers come in', async () => {
    const backend = new GatedBackend();
    const engine = new LockEngine({ backend });
    try {
      const order: string[] = [];
      const first = engine.acquire('k', { wait: 5_000 }).then((h) => (order.push('first'), h));
      const second = engine.acquire('k', { wait: 5_000 }).then((h) => (order.push('second'), h));
      await settle();
      // Only the head attempts: the second arrival sends nothing while the first is in flight.
      expect(backend.pending).toHaveLength(1);
      backend.gated = false;
      backend.pending.shift()!.let();
      const h1 = await first;
      await settle();
      expect(order).toEqual(['first']);
      await h1.release();
      const h2 = await second;
      expect(order).toEqual(['first', 'second']);
      expect(h2.fencingToken > h1.fencingToken).toBe(true);
      await h2.release();
    } finally {
      await engine.close();
    }
  });

  it('the deadline starts only when a request waits: a grant leaves no timer behind, a busy waiter still times out', async () => {
    const backend = new MemoryLockBackend();
    const engine = new LockEngine({ backend });
    try {
      const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const before = timers();
      const held = await engine.acquire('k', { wait: 60_000 });
      // Neither a deadline nor the call budget outlives the grant.
      expect(timers()).toBe(before);
      const waiting = engine.acquire('k', { wait: 50 });
      await expect(waiting).rejects.toMatchObject({ code: 'LOCK_ACQUIRE_TIMEOUT' });
      await held.release();
    } finally {
      await engine.close();
    }
  });
});
