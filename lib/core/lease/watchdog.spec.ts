import { MemoryLockBackend } from '../../backends/memory/memory.backend';
import type { BackendLock } from '../../interfaces/lock-backend.interface';
import { LockEngine } from '../lock-engine';

/** A memory backend that records each renew() batch and can be made unreachable. */
class CountingBackend extends MemoryLockBackend {
  batches: number[] = [];
  down = false;
  override async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    this.batches.push(locks.length);
    if (this.down) throw new Error('connection refused');
    return super.renew(locks);
  }
}

const until = (signal: AbortSignal) =>
  new Promise((r) => signal.addEventListener('abort', () => r(signal.reason), { once: true }));

describe('watchdog', () => {
  it('renews every held lock of a backend in one batch per tick', async () => {
    const backend = new CountingBackend();
    const engine = new LockEngine({ backend });
    const handles = await Promise.all(
      Array.from({ length: 200 }, (_, i) => engine.acquire(`k${i}`, { ttl: 1_200 })),
    );
    // time passing is what is under test (ticks at ~200-400 ms)
    await new Promise((r) => setTimeout(r, 1_000));
    expect(backend.batches.length).toBeGreaterThanOrEqual(2);
    // Batched, not one call per lock: usually one batch of 200 per tick; grants spread over a
    // loaded machine may split a tick's locks in two batches, never more.
    const renewed = backend.batches.reduce((a, b) => a + b, 0);
    expect(renewed / backend.batches.length).toBeGreaterThanOrEqual(100);
    expect(handles.every((h) => h.held)).toBe(true);
    await engine.close();
  });

  it('declares a lock lost when renewals fail until its validity ends, and never throws from the timer', async () => {
    const backend = new CountingBackend();
    const engine = new LockEngine({ backend });
    const h = await engine.acquire('k', { ttl: 300 });
    backend.down = true;
    const reason = (await until(h.signal)) as Error;
    expect(reason.name).toBe('LockLostError');
    expect(reason.message).toMatch(/ttl ran out before a renewal was confirmed/);
    expect(backend.batches.length).toBeGreaterThanOrEqual(2); // it retried
    await engine.close();
  });

  it('stops renewing after maxHold, and the lock then expires with a lost signal', async () => {
    const backend = new CountingBackend();
    const engine = new LockEngine({ backend });
    const h = await engine.acquire('k', { ttl: 200, maxHold: 250 });
    const reason = (await until(h.signal)) as Error;
    expect(reason.message).toMatch(/maxHold/);
    const next = await engine.acquire('k', { wait: 1_000 });
    expect(next.fencingToken > h.fencingToken).toBe(true);
    await engine.close();
  });

  it('extend(ttl) changes the ttl used by later renewals', async () => {
    const backend = new CountingBackend();
    const engine = new LockEngine({ backend });
    const h = await engine.acquire('k', { ttl: 100 });
    await h.extend(5_000);
    const renewSpy = jest.spyOn(backend, 'renew');
    await new Promise((r) => setTimeout(r, 300));
    expect(renewSpy).not.toHaveBeenCalled(); // next renewal is due at 5000/3 ms, not 100/3
    expect(h.held).toBe(true);
    await engine.close();
  });
});
