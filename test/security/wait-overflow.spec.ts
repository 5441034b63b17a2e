import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { MAX_DURATION_MS } from '../../lib/backend-kit/limits';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import type { BackendAttempt } from '../../lib/interfaces/lock-backend.interface';

/**
 * Issue 14.6: `wait >= 2147483548` made the engine's budget timer (wait + 100 ms grace) overflow
 * Node's 2^31-1 ms limit, fire after 1 ms, fail with a 503, and leave the backend's waiter polling.
 */
describe('wait near the maximum (issue 14.6)', () => {
  afterEach(() => jest.restoreAllMocks());

  it('wait 2147483548 arms no timer beyond 2^31-1 ms and still gets the lock on release', async () => {
    const backend = new MemoryLockBackend();
    const engine = new LockEngine({ backend });
    const holder = await engine.acquire('big');
    const delays: number[] = [];
    const real = global.setTimeout;
    jest.spyOn(global, 'setTimeout').mockImplementation(((
      fn: () => void,
      ms?: number,
      ...rest: unknown[]
    ) => {
      delays.push(Number(ms ?? 0));
      return (real as (...a: unknown[]) => NodeJS.Timeout)(fn, ms, ...rest);
    }) as typeof setTimeout);
    let attempts = 0;
    const tryAcquire = backend.tryAcquire.bind(backend);
    backend.tryAcquire = (r: BackendAttempt) => (attempts++, tryAcquire(r));
    const waiter = engine.acquire('big', { wait: 2_147_483_548 });
    let settled: unknown = 'pending';
    waiter.then(
      () => (settled = 'granted'),
      (e: unknown) => (settled = e),
    );
    while (attempts < 1) await new Promise((r) => setImmediate(r));
    // The overflowed timer fired after 1 ms; give it several event-loop turns to show itself.
    await new Promise((r) => real(r, 20));
    expect(settled).toBe('pending');
    await holder.release();
    const h = await waiter;
    expect(h.held).toBe(true);
    await h.release();
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_DURATION_MS);
    await engine.close();
  });

  it('the backend’s signal aborts when the engine gives up on its own budget timer', async () => {
    let seen: AbortSignal | undefined;
    const backend = new MemoryLockBackend();
    backend.tryAcquire = (r: BackendAttempt) => {
      seen = r.signal;
      return new Promise(() => undefined); // a backend that never answers
    };
    const engine = new LockEngine({ backend, operationTimeout: 50 });
    await expect(engine.acquire('stuck', { wait: 0 })).rejects.toBeInstanceOf(
      LockBackendUnavailableError,
    );
    expect(seen?.aborted).toBe(true);
    await engine.close();
  });
});
