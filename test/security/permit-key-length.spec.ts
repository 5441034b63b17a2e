import {
  InvalidLockOptionsError,
  LockEngine,
  LockKeyResolutionError,
  MemoryLockBackend,
} from '../../lib';
import { MAX_KEY_LENGTH } from '../../lib/backend-kit/limits';

/**
 * A permit-lock semaphore (a backend without a native one) with a key at the length limit answered
 * 500, not 400: the key fit as a lock, its permit keys `<key>#<i>` did not, and that surfaced from
 * a permit's attempt as a code error. The permit keys are checked first: from a @Locked template it
 * is the request's fault (LockKeyResolutionError, 400 over HTTP), as a plain key's length is.
 */
describe('permit keys of a semaphore over plain locks', () => {
  // Memory without its native semaphore: the recipe falls back to permit locks.
  const backend = Object.defineProperty(new MemoryLockBackend(), 'semaphore', { value: undefined });
  const engine = new LockEngine({ backend, keyPrefix: 'p:' });
  afterAll(() => engine.close());
  const atLimit = 'k'.repeat(MAX_KEY_LENGTH - 'p:'.length);

  it('a permit-lock semaphore with a key at the length limit is a key resolution error from a template', async () => {
    await expect(
      engine.acquire(atLimit, { permits: 2, wait: 0 }, { keyTemplate: 'order:<id>' }),
    ).rejects.toBeInstanceOf(LockKeyResolutionError);
  });

  it('a permit-lock semaphore with a key at the length limit names the limit when called directly', async () => {
    const error = await engine.acquire(atLimit, { permits: 2, wait: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    expect((error as Error).message).toMatch(/permit keys/);
  });

  it('a key whose permit keys fit still takes a permit', async () => {
    const h = await engine.acquire(atLimit.slice(2), { permits: 2, wait: 0 });
    expect(h.held).toBe(true);
    await h.release();
  });
});
