import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';

/**
 * Issue 14.5: reentrancy leaked through shared async context. Timers started under
 * withLock('leader') re-entered job:nightly concurrently; parallel branches of one call re-entered
 * each other depending on timing; the watchdog's timer ran in the context of the acquire that armed
 * it, so request B's loss listener ran inside request A's scope and re-entered A's lock.
 */
const nextMacrotask = () => new Promise<void>((r) => setImmediate(r));

describe('reentrancy belongs to the owning call only (issue 14.5)', () => {
  let backend: MemoryLockBackend;
  let engine: LockEngine;
  beforeEach(() => {
    backend = new MemoryLockBackend();
    engine = new LockEngine({ backend, defaults: { wait: 5_000, ttl: 5_000 } });
  });
  afterEach(() => engine.close());

  it('timers started under withLock("leader") do not re-enter each other’s job:nightly', async () => {
    let inside = 0;
    let maxInside = 0;
    let openGate!: () => void;
    const gate = new Promise<void>((r) => (openGate = r));
    const ticks: Promise<void>[] = [];
    let allStarted!: () => void;
    const started = new Promise<void>((r) => (allStarted = r));
    await engine.withLock('leader', async () => {
      const tick = (i: number) => {
        const acquiring = engine.acquire('job:nightly');
        if (i < 5) setTimeout(() => tick(i + 1), 0);
        else allStarted();
        ticks.push(
          acquiring.then(async (h: LockHandle) => {
            maxInside = Math.max(maxInside, ++inside);
            await gate;
            inside--;
            await h.release();
          }),
        );
      };
      setTimeout(() => tick(1), 0);
      await started;
    });
    openGate();
    await started;
    await Promise.all(ticks);
    expect(maxInside).toBe(1);
  });

  it('parallel branches of one call do not re-enter each other’s locks, whatever the timing', async () => {
    let inside = 0;
    let maxInside = 0;
    const branch = async (delay: boolean) => {
      if (delay) await nextMacrotask();
      const h = await engine.acquire('x');
      maxInside = Math.max(maxInside, ++inside);
      await nextMacrotask();
      await nextMacrotask();
      inside--;
      await h.release();
    };
    await engine.withLock('request', () => Promise.all([branch(false), branch(true)]));
    // A @Locked-like owning call: its own lock first, then parallel branches.
    await engine.runInScope(async () => {
      const own = await engine.acquire('own');
      await Promise.all([branch(false), branch(true), branch(true)]);
      await own.release();
    });
    expect(maxInside).toBe(1);
  });

  it('request B’s loss listener never runs in request A’s scope (the watchdog timer A armed)', async () => {
    engine = new LockEngine({ backend, defaults: { wait: 0, ttl: 90 } });
    let releaseA!: () => void;
    const holdingA = engine.withLock('a', () => new Promise<void>((r) => (releaseA = r)));
    await nextMacrotask();
    const hb = await engine.acquire('b');
    backend.forceDelete('lock:b');
    const seen = await new Promise<LockHandle | null>((resolve) => {
      hb.signal.addEventListener(
        'abort',
        () => void engine.tryAcquire('a').then(resolve, () => resolve(null)),
        { once: true },
      );
    });
    expect(seen).toBeNull();
    releaseA();
    await holdingA;
  });

  it('reentrancy ends when the owning call settles: a timer it left behind is another owner', async () => {
    let later!: Promise<LockHandle | null>;
    let scheduled!: () => void;
    const ready = new Promise<void>((r) => (scheduled = r));
    const h = await engine.runInScope(async () => {
      const handle = await engine.acquire('k'); // the scope's own lock; the handle outlives the call
      setTimeout(() => {
        later = engine.tryAcquire('k');
        scheduled();
      }, 0);
      return handle;
    });
    await ready;
    expect(await later).toBeNull();
    await h.release();
  });

  it('nested calls of the owner still re-enter (same token, no second grant)', async () => {
    await engine.withLock('n', async (outer) => {
      const inner = await engine.acquire('n', { wait: 0 });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      await engine.withLock(
        'n',
        async (again) => expect(again.fencingToken).toBe(outer.fencingToken),
        { wait: 0 },
      );
      await inner.release();
      expect(outer.held).toBe(true);
    });
  });
});

describe('backend session callbacks run outside the caller’s scope (issue 14.5)', () => {
  it('onLost called by a backend from inside request A’s scope does not let B’s listener re-enter A', async () => {
    const lost = new Map<string, (reason: string) => void>();
    class SessionBackend extends MemoryLockBackend {
      override async tryAcquire(request: Parameters<MemoryLockBackend['tryAcquire']>[0]) {
        lost.set(request.key, request.onLost);
        return super.tryAcquire(request);
      }
    }
    const engine = new LockEngine({ backend: new SessionBackend(), defaults: { wait: 0 } });
    const hb = await engine.acquire('b');
    const seen = new Promise<unknown>((resolve) => {
      hb.signal.addEventListener(
        'abort',
        () => void engine.tryAcquire('a').then(resolve, resolve),
        { once: true },
      );
    });
    // A session callback (say, an etcd keepalive started during A's acquire) reports B's loss.
    await engine.withLock('a', async () => {
      lost.get('lock:b')?.('the session expired');
      expect(await seen).toBeNull();
    });
    await engine.close();
  });
});

describe('library callbacks run outside the caller’s own AsyncLocalStorage too (issue 14.5)', () => {
  it('a watchdog-detected loss reaches listeners with none of the arming request’s context', async () => {
    const { AsyncLocalStorage } = await import('node:async_hooks');
    const requestContext = new AsyncLocalStorage<string>(); // e.g. an app's per-request store
    const backend = new MemoryLockBackend();
    const engine = new LockEngine({ backend, defaults: { wait: 0, ttl: 90 } });
    let releaseA!: () => void;
    const holdingA = requestContext.run('request A', () =>
      engine.withLock('a', () => new Promise<void>((r) => (releaseA = r))),
    );
    await new Promise<void>((r) => setImmediate(r));
    const hb = await requestContext.run('request B', () => engine.acquire('b'));
    backend.forceDelete('lock:b');
    const seen = await new Promise<string | undefined>((resolve) => {
      hb.signal.addEventListener('abort', () => resolve(requestContext.getStore()), { once: true });
    });
    expect(seen).toBeUndefined();
    releaseA();
    await holdingA;
    await engine.close();
  });
});
