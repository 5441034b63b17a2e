import { AsyncLocalStorage } from 'node:async_hooks';
import { MemoryLockBackend } from '../../backends/memory/memory.backend';
import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendAttempt,
} from '../../interfaces/lock-backend.interface';
import { LockEngine } from '../lock-engine';
import { LockLease } from '../lease/lock-lease';
import { Watchdog } from '../lease/watchdog';

/** A memory backend whose grants are already invalid when they arrive (validity 0): a lost lock. */
class StaleGrantBackend extends MemoryLockBackend {
  override async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    const result = await super.tryAcquire(request);
    return result.acquired ? { ...result, validity: 0 } : result;
  }
}

/** A memory backend whose tryAcquire answers only when the test lets it. */
class GatedBackend extends MemoryLockBackend {
  readonly pending: (() => void)[] = [];
  gated = true;
  override async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    if (this.gated) await new Promise<void>((r) => this.pending.push(r));
    return super.tryAcquire(request);
  }
}

/**
 * A memory backend with a native queued wait, shaped like Redis's: the first attempt does not read
 * `request.signal`; a busy answer then waits, reading the signal first, until the signal aborts.
 */
class NativeWaitBackend extends MemoryLockBackend {
  async acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    const first = await this.tryAcquire(request);
    if (first.acquired) return first;
    const signal = request.signal;
    if (!signal.aborted)
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
    return { acquired: false };
  }
}

/** A memory backend whose release never answers while `hang` is set. */
class HangingReleaseBackend extends MemoryLockBackend {
  hang = false;
  override async release(lock: Parameters<MemoryLockBackend['release']>[0]): Promise<void> {
    if (this.hang) return new Promise<void>(() => undefined);
    return super.release(lock);
  }
}

const settle = () => new Promise((r) => setImmediate(r));

/**
 * What the uncontended @Locked / withLock path no longer pays for, and what it still guarantees.
 */
describe('the uncontended hot path', () => {
  it('a locked call whose lock is already lost when it would start never runs its function', async () => {
    const engine = new LockEngine({ backend: new StaleGrantBackend() });
    try {
      const fn = jest.fn(async () => 'ran');
      await expect(engine.withLock('k', fn)).rejects.toMatchObject({ name: 'LockLostError' });
      await settle();
      expect(fn).not.toHaveBeenCalled();
    } finally {
      await engine.close();
    }
  });

  it('an uncontended acquire with a signal adds no abort listener to it', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    try {
      const signal = new AbortController().signal;
      const add = jest.spyOn(signal, 'addEventListener');
      const handle = await engine.acquire('k', { signal, wait: 5_000 });
      expect(add).not.toHaveBeenCalled();
      await handle.release();
    } finally {
      await engine.close();
    }
  });

  it('a signal aborted during the first attempt: the grant is given back and the acquire rejects with its reason', async () => {
    const backend = new GatedBackend();
    const engine = new LockEngine({ backend });
    try {
      const controller = new AbortController();
      const acquire = engine.acquire('k', { signal: controller.signal, wait: 5_000 });
      await settle();
      expect(backend.pending).toHaveLength(1);
      controller.abort(new Error('client went away'));
      backend.gated = false;
      backend.pending.shift()!();
      await expect(acquire).rejects.toThrow('client went away');
      // The grant was given back: the key is free again at once.
      const again = await engine.tryAcquire('k');
      expect(again).not.toBeNull();
      await again!.release();
    } finally {
      await engine.close();
    }
  });

  it.each([
    ['polled (memory)', () => new MemoryLockBackend()],
    ['native-queue', () => new NativeWaitBackend()],
  ])("a caller's cancel while waiting stops the wait at once: %s backend", async (_, backend) => {
    const engine = new LockEngine({ backend: backend() });
    try {
      const holder = await engine.acquire('k');
      const controller = new AbortController();
      const waiter = engine.acquire('k', { signal: controller.signal, wait: 60_000 });
      await settle();
      controller.abort(new Error('cancelled'));
      await expect(waiter).rejects.toThrow('cancelled');
      await holder.release();
    } finally {
      await engine.close();
    }
  });

  it('an uncontended acquire on a native-queue backend arms no deadline timer and no abort listener', async () => {
    const engine = new LockEngine({ backend: new NativeWaitBackend() });
    const setTimeoutSpy = jest.spyOn(global, 'setTimeout');
    try {
      const signal = new AbortController().signal;
      const add = jest.spyOn(signal, 'addEventListener');
      const handle = await engine.acquire('k', { signal, wait: 5_000, ttl: 60_000 });
      // The deadline timer would be armed for at most `wait`; the call budget is wait + grace.
      const delays = setTimeoutSpy.mock.calls.map((call) => call[1] ?? 0);
      expect(delays.filter((ms) => ms <= 5_000)).toEqual([]);
      expect(add).not.toHaveBeenCalled();
      await handle.release();
    } finally {
      setTimeoutSpy.mockRestore();
      await engine.close();
    }
  });

  it('a waiting acquire on a native-queue backend still times out at its deadline', async () => {
    const engine = new LockEngine({ backend: new NativeWaitBackend() });
    try {
      const holder = await engine.acquire('k');
      await expect(engine.acquire('k', { wait: 50 })).rejects.toMatchObject({
        name: 'LockAcquireTimeoutError',
      });
      await holder.release();
    } finally {
      await engine.close();
    }
  });

  it('a warm acquire + release cycle arms no timer: the backend calls share one budget timer', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    try {
      await (await engine.acquire('k', { wait: 0 })).release(); // the shared timer is armed once
      const setTimeoutSpy = jest.spyOn(global, 'setTimeout');
      try {
        for (let i = 0; i < 3; i++) await (await engine.acquire('k', { wait: 0 })).release();
        expect(setTimeoutSpy).not.toHaveBeenCalled();
      } finally {
        setTimeoutSpy.mockRestore();
      }
    } finally {
      await engine.close();
    }
  });

  it('a backend call that never answers still fails at its budget, before a longer budget armed first', async () => {
    const backend = new HangingReleaseBackend();
    const long = new LockEngine({ backend: new MemoryLockBackend(), operationTimeout: 60_000 });
    const short = new LockEngine({ backend, operationTimeout: 100 });
    try {
      await (await long.acquire('k', { wait: 0 })).release(); // arms the shared timer ~60 s out
      const handle = await short.acquire('k', { wait: 0 });
      backend.hang = true;
      await expect(handle.release()).rejects.toMatchObject({
        name: 'LockBackendUnavailableError',
        message: expect.stringContaining('got no answer within 100 ms'),
      });
    } finally {
      backend.hang = false;
      await short.close();
      await long.close();
    }
  });

  it('the watchdog keeps its timer when its last lease goes: acquire + release arms no new timer', () => {
    const backend = new MemoryLockBackend();
    const watchdog = new Watchdog((op) => op);
    const lease = (key: string) =>
      new LockLease({
        key,
        fullKey: key,
        owner: 'o',
        mode: 'exclusive',
        ttl: 30_000,
        fencingToken: 1n,
        backend,
        backendName: 'default',
        grantedAt: performance.now(),
        validity: 29_000,
        maxHold: undefined,
        onEnd: () => undefined,
      });
    const setTimeoutSpy = jest.spyOn(global, 'setTimeout');
    try {
      const first = lease('a');
      watchdog.add(first);
      watchdog.delete(first);
      watchdog.add(lease('b')); // due later than the armed timer: that timer will see it
      expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    } finally {
      setTimeoutSpy.mockRestore();
      watchdog.stop();
    }
  });
  it('a backend attempt made inside an owning call runs outside its scope, every time', async () => {
    const seen: (string | undefined)[] = [];
    const box: { engine?: LockEngine } = {};
    class Watching extends MemoryLockBackend {
      override tryAcquire(request: Parameters<MemoryLockBackend['tryAcquire']>[0]) {
        seen.push(box.engine!.current()?.key);
        return super.tryAcquire(request);
      }
    }
    const engine = (box.engine = new LockEngine({ backend: new Watching() }));
    try {
      await engine.withLock('outer', async () => {
        for (const key of ['a', 'b', 'c']) await (await engine.acquire(key)).release();
      });
      expect(seen).toEqual([undefined, undefined, undefined, undefined]);
    } finally {
      await engine.close();
    }
  });

  it('acquire + release never enter the reentrancy storage (its promise hook stays off) until an owning call runs', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
    try {
      for (let i = 0; i < 3; i++) await (await engine.acquire('k')).release();
      await (await engine.acquire('s', { permits: 2 })).release();
      expect(run).not.toHaveBeenCalled();
      // An owning call (withLock, @Locked, runInScope) turns it on, and from then on the engine
      // runs its own work outside every caller's scope.
      await engine.withLock('k', async () => undefined);
      expect(run.mock.calls.length).toBeGreaterThan(0);
    } finally {
      run.mockRestore();
      await engine.close();
    }
  });
});
