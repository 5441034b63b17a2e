import { MemoryLockBackend } from '../../backends/memory/memory.backend';
import { LockAcquireTimeoutError } from '../../errors/lock-acquire-timeout.error';
import type {
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
} from '../../interfaces/lock-backend.interface';
import type { LockEvent } from '../activity/lock-events';
import { LockEngine } from '../lock-engine';
import type { GrantDriver } from './grant-driver';

/** A grant driver over the memory backend that records what the pipeline asked of it. */
function recordingDriver(backend: MemoryLockBackend): GrantDriver & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    tryAcquire: (request: BackendAttempt) => {
      calls.push(`try ${request.key}`);
      return backend.tryAcquire(request);
    },
    holder: {
      renew: (locks: readonly BackendLock[]) => {
        calls.push(`renew ${locks.length}`);
        return backend.renew(locks);
      },
      release: (lock: BackendLock) => {
        calls.push(`release ${lock.key}`);
        return backend.release(lock);
      },
    },
    reentry: '#driver',
    manyHolders: false,
  };
}

describe('the acquire pipeline', () => {
  let backend: MemoryLockBackend;
  let engine: LockEngine;
  beforeEach(() => {
    backend = new MemoryLockBackend();
    // Long ttls throughout: no case here is about expiry, and on a loaded CI a stalled event loop
    // outlasted short ones (a hold expired before a renewal or a busy answer).
    engine = new LockEngine({ backend, defaults: { ttl: 30_000, wait: 0 } });
  });
  afterEach(() => engine.close());

  it('has one result shape: a handle, or a rejection with LockAcquireTimeoutError when busy', async () => {
    const held = await engine.acquireOne({ key: 'k', options: undefined });
    expect(held.fencingToken).toBeGreaterThan(0n);
    const busy = engine.acquireOne({ key: 'k', options: { wait: 50 } });
    await expect(busy).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await held.release();
  });

  it('takes, renews and releases a grant through the driver it is given, never the lock contract', async () => {
    const driver = recordingDriver(backend);
    // 3 s: a renewal within a second (with 150 ms a stalled loop let the lease expire first).
    const handle = await engine.acquireOne({ key: 'f', options: { ttl: 3_000 }, driver });
    // The watchdog renews at ttl/3 through the driver's holder; a lost lease ends the wait too.
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (handle.signal.aborted || driver.calls.some((c) => c.startsWith('renew')))
          resolve(clearInterval(timer));
      }, 10);
    });
    expect(driver.calls.some((c) => c.startsWith('renew'))).toBe(true);
    expect(handle.held).toBe(true);
    await handle.release();
    expect(driver.calls[0]).toBe('try lock:f');
    expect(driver.calls).toContain('release lock:f');
  });

  it('turns a grant a recipe made into a lease without an attempt, with its token and owner', async () => {
    const owner = 'a'.repeat(32);
    const request = {
      key: 'lock:g',
      owner,
      mode: 'exclusive' as const,
      ttl: 300,
      signal: new AbortController().signal,
      onLost: () => undefined,
    };
    const result = (await backend.tryAcquire(request)) as BackendAcquireResult & {
      acquired: true;
    };
    const driver = recordingDriver(backend);
    const handle = await engine.acquireOne({
      key: 'g',
      options: undefined,
      driver,
      granted: { owner, result },
    });
    expect(driver.calls).toEqual([]);
    expect(handle.owner).toBe(owner);
    expect(handle.fencingToken).toBe(result.fencingToken);
    await handle.release();
    expect(await backend.tryAcquire({ ...request, owner: 'b'.repeat(32) })).toMatchObject({
      acquired: true,
    });
  });

  it('re-enters a hold of the same driver in one owning call; another driver of the key is another grant', async () => {
    const driver = recordingDriver(backend);
    await engine.runInScope(async () => {
      const outer = await engine.acquireOne({ key: 'r', options: undefined });
      const inner = await engine.acquireOne({ key: 'r', options: undefined });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      // The driver's grant of the same key is not the lock: it attempts (and finds the key busy).
      await expect(engine.acquireOne({ key: 'r', options: undefined, driver })).rejects.toThrow(
        LockAcquireTimeoutError,
      );
      expect(driver.calls).toEqual(['try lock:r']);
      await inner.release();
      await outer.release();
    });
  });

  it('close() stops a wait in flight: the waiter is refused, never granted the lock close released', async () => {
    const held = await engine.acquire('w');
    const waiter = engine.acquire('w', { wait: 120_000 });
    await engine.close();
    await expect(waiter).rejects.toMatchObject({
      code: 'LOCK_BACKEND_UNAVAILABLE',
      key: 'w',
      message: expect.stringContaining('the lock module was shut down'),
    });
    expect(held.held).toBe(false);
  });

  it('close() stops a wait for a lock another process holds, instead of waiting out its deadline', async () => {
    const other = new LockEngine({ backend, defaults: { ttl: 30_000 } });
    const held = await other.acquire('x');
    const waiter = engine.acquire('x', { wait: 120_000 });
    await engine.close();
    await expect(waiter).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE', key: 'x' });
    expect(held.held).toBe(true);
    await other.close();
  });

  it('reports each acquire once to its one observation hook, with the template it came from', async () => {
    const events: LockEvent[] = [];
    engine.events.on((e) => events.push(e), ['acquired', 'busy']);
    const meta = { keyTemplate: 'order:<id>' };
    const handle = await engine.acquire('order:1', undefined, meta);
    expect(await engine.tryAcquire('order:1', undefined, meta)).toBeNull();
    await handle.release();
    expect(events.map((e) => [e.type, 'keyTemplate' in e ? e.keyTemplate : undefined])).toEqual([
      ['acquired', 'order:<id>'],
      ['busy', 'order:<id>'],
    ]);
  });
});
