import { MemoryLockBackend } from '../../backends/memory/memory.backend';
import { LockEngine } from '../lock-engine';

describe('LockHandle with await using', () => {
  it('releases the lock at the end of the block', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    let inside: boolean | undefined;
    let handle: { held: boolean } | undefined;
    {
      await using lock = await engine.acquire('order:1');
      handle = lock;
      inside = lock.held;
      expect(await engine.tryAcquire('order:1', { ttl: 1_000 })).toBeNull();
    }
    expect(inside).toBe(true);
    expect(handle.held).toBe(false);
    const next = await engine.tryAcquire('order:1');
    expect(next).not.toBeNull();
    await next?.release();
    await engine.close();
  });

  it('releases the lock when the block throws, and the error still reaches the caller', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    const work = async () => {
      await using lock = await engine.acquire('order:2');
      expect(lock.held).toBe(true);
      throw new Error('payment failed');
    };
    await expect(work()).rejects.toThrow('payment failed');
    const next = await engine.tryAcquire('order:2');
    expect(next).not.toBeNull();
    await next?.release();
    await engine.close();
  });

  it('disposes once: a release inside the block is not repeated', async () => {
    const backend = new MemoryLockBackend();
    const releases: string[] = [];
    const release = backend.release.bind(backend);
    backend.release = async (lock) => {
      releases.push(lock.key);
      return release(lock);
    };
    const engine = new LockEngine({ backend });
    {
      await using lock = await engine.acquire('order:3');
      await lock.release();
    }
    expect(releases).toEqual(['lock:order:3']);
    await engine.close();
  });
});
