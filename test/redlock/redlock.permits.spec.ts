import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { redlockFile } from './redlock.servers';

/**
 * Redlock has no native semaphore: `permits` takes permit locks `<key>#<i>`. Its holders must agree
 * on N as every native semaphore's do: a request of N=2 on a key whose holders took N=3 is refused
 * (InvalidLockOptionsError naming `permits` and the holders' N), and leaves nothing held. Before,
 * it found a permit of its own N free and was granted. Each engine is another process to the
 * masters (its own clients).
 */
const { engine: processEngine } = redlockFile(3, 'permits:', { ttl: 10_000, wait: 0 });

describe('Redlock semaphores of permit locks: holders agree on permits', () => {
  it('refuses N=2 on a key whose two holders took N=3, holding nothing after', async () => {
    const [a, b, c] = [await processEngine(), await processEngine(), await processEngine()];
    const held: LockHandle[] = [
      await a.acquire('pool', { permits: 3 }),
      await b.acquire('pool', { permits: 3 }),
    ];
    const refused = c.acquire('pool', { permits: 2 });
    await expect(refused).rejects.toBeInstanceOf(InvalidLockOptionsError);
    await expect(refused).rejects.toMatchObject({ option: 'permits' });
    await expect(refused).rejects.toThrow(/3 \(the permits this semaphore's holders use\)/);
    expect(c.operator.heldLocks()).toEqual([]);
    // The third permit of N=3 is still free for a holder that agrees.
    const third = await c.acquire('pool', { permits: 3 });
    expect(third.held).toBe(true);
    await Promise.all([...held, third].map((h) => h.release()));
    // Once the N=3 holders are gone, N=2 is the semaphore's N.
    const two = await c.acquire('pool', { permits: 2 });
    expect(two.held).toBe(true);
    await two.release();
  });

  it('a holder of N shows the semaphore key alone, its permit token as its fencing token', async () => {
    const a = await processEngine();
    const h = await a.acquire('shown', { permits: 2 });
    expect(h.keys).toEqual(['shown']);
    expect([...h.fencingTokens.keys()]).toEqual(['shown']);
    await h.release();
  });
});
