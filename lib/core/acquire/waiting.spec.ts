import { MemoryLockBackend } from '../../backends/memory/memory.backend';
import type { BackendAcquireResult, BackendAttempt } from '../../interfaces/lock-backend.interface';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
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

/**
 * The memory backend with a queue of its own, as Redis has: a waiting attempt that finds the key
 * held joins the queue and answers busy with a wake that only a release fires (no fallback wakes
 * it within a test: fallbackDelay is a minute); leave takes a waiter out.
 */
class QueueingBackend extends MemoryLockBackend {
  readonly waitPolicy = { fallbackDelay: 60_000 };
  readonly queue: { owner: string; wake: () => void }[] = [];
  readonly attempts: string[] = [];
  readonly left: string[] = [];
  failWith: Error | undefined;

  override async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    this.attempts.push(request.owner);
    if (this.failWith) throw this.failWith;
    const result = await super.tryAcquire(request);
    if (result.acquired || !request.wait) return result;
    let wake = (): void => undefined;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    if (!this.queue.some((q) => q.owner === request.owner))
      this.queue.push({ owner: request.owner, wake });
    else this.queue.find((q) => q.owner === request.owner)!.wake = wake;
    const listener = {
      wait: (ms: number, signal: AbortSignal) =>
        Promise.race([
          woken,
          new Promise<void>((r) => signal.addEventListener('abort', () => r())),
        ]),
      dispose: () => undefined,
    };
    return { acquired: false, wake: listener };
  }

  override async release(lock: Parameters<MemoryLockBackend['release']>[0]): Promise<void> {
    await super.release(lock);
    this.queue.shift()?.wake();
  }

  async leave(request: BackendAttempt): Promise<void> {
    this.left.push(request.owner);
    const at = this.queue.findIndex((q) => q.owner === request.owner);
    if (at >= 0) this.queue.splice(at, 1);
  }
}

describe('AcquireRunner: a backend that queues its waiters (leave)', () => {
  it('waiters of one process all queue in the backend, each sleeps on its own wake, and a release wakes the next', async () => {
    const backend = new QueueingBackend();
    const engine = new LockEngine({ backend });
    try {
      const held = await engine.acquire('k', { wait: 5_000 });
      const first = engine.acquire('k', { wait: 30_000 });
      const second = engine.acquire('k', { wait: 30_000 });
      await settle();
      // No local line: both attempted and both are queued in the backend.
      expect(backend.queue).toHaveLength(2);
      await held.release();
      const h1 = await first;
      // One attempt to queue, one after its wake: no poll in between.
      expect(backend.attempts.filter((o) => o === backend.attempts[1])).toHaveLength(2);
      await h1.release();
      await (await second).release();
      expect(backend.left).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  it('a waiter that gives up (deadline or cancel) leaves the queue once, after its last attempt', async () => {
    const backend = new QueueingBackend();
    const engine = new LockEngine({ backend });
    try {
      const held = await engine.acquire('k', { wait: 5_000 });
      await expect(engine.acquire('k', { wait: 30 })).rejects.toMatchObject({
        code: 'LOCK_ACQUIRE_TIMEOUT',
      });
      expect(backend.left).toHaveLength(1);
      const controller = new AbortController();
      const cancelled = engine.acquire('k', { wait: 30_000, signal: controller.signal });
      await settle();
      expect(backend.queue).toHaveLength(1);
      controller.abort(new Error('caller gone'));
      await expect(cancelled).rejects.toThrow('caller gone');
      expect(backend.left).toHaveLength(2);
      expect(backend.queue).toHaveLength(0);
      await held.release();
    } finally {
      await engine.close();
    }
  });

  it('a final failure ends the wait at once (no retry within the budget), and the waiter leaves', async () => {
    const backend = new QueueingBackend();
    const engine = new LockEngine({ backend });
    try {
      const held = await engine.acquire('k', { wait: 5_000 });
      const waiting = engine.acquire('k', { wait: 60_000 });
      await settle();
      backend.failWith = new LockBackendUnavailableError('queueing', 'server down', {
        final: true,
      });
      backend.queue[0].wake();
      await expect(waiting).rejects.toThrow('server down');
      // The queueing attempt, and the one that failed: none after it.
      expect(backend.attempts).toHaveLength(3);
      expect(backend.left).toHaveLength(1);
      backend.failWith = undefined;
      await held.release();
    } finally {
      await engine.close();
    }
  });
});
