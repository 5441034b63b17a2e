import { LockEngine, MemoryLockBackend, InvalidLockOptionsError } from '../../lib';

/**
 * minHold (ShedLock's lockAtLeastFor): a release before minHold from the grant leaves the lock
 * held, unrenewed, until then. Asserted on the backend's own monotonic clock: the next grant may
 * not come before the first grant + minHold.
 */
describe('minHold', () => {
  const backend = new MemoryLockBackend();
  const a = new LockEngine({ backend, keyPrefix: '' });
  const b = new LockEngine({ backend, keyPrefix: '' });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('a release before minHold keeps the lock busy until minHold from the grant, then frees it by itself', async () => {
    const grantedAt = performance.now();
    const h = await a.acquire('job:early', { ttl: 5_000, minHold: 400 });
    await h.release();
    expect(h.held).toBe(false);
    expect(await b.tryAcquire('job:early')).toBeNull();
    const next = await b.acquire('job:early', { wait: 5_000 });
    expect(performance.now() - grantedAt).toBeGreaterThanOrEqual(400 - 10);
    expect(next.fencingToken).toBeGreaterThan(h.fencingToken);
    await next.release();
  });

  it('work longer than minHold releases at once', async () => {
    const h = await a.acquire('job:long', { ttl: 5_000, minHold: 50 });
    await new Promise((r) => setTimeout(r, 80)); // the work itself: it outlasts minHold
    await h.release();
    const next = await b.tryAcquire('job:long');
    expect(next).not.toBeNull();
    await next?.release();
  });

  it('the lingering lock is no longer the holder’s: its handle reads released, extend fails', async () => {
    const h = await a.acquire('job:linger', { ttl: 5_000, minHold: 300 });
    await h.release();
    await expect(h.extend()).rejects.toMatchObject({ name: 'LockNotHeldError' });
    expect(a.heldCount).toBe(0);
    await b.acquire('job:linger', { wait: 5_000 }).then((x) => x.release());
  });

  it('rejects minHold > maxHold and bad values, naming the option', async () => {
    await expect(a.acquire('x', { minHold: 500, maxHold: 100 })).rejects.toBeInstanceOf(
      InvalidLockOptionsError,
    );
    await expect(a.acquire('x', { minHold: 0 })).rejects.toMatchObject({ option: 'minHold' });
    await expect(a.acquire('x', { minHold: 1.5 })).rejects.toMatchObject({ option: 'minHold' });
    expect(() => new LockEngine({ backend, defaults: { minHold: -1 } })).toThrow(
      /defaults\.minHold/,
    );
  });
});
