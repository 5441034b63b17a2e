import { randomBytes } from 'node:crypto';
import type { LockEngine } from '../../lib/core/lock-engine';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from './conformance-tools';

/** What the multi-key cases need from the conformance suite of one backend. */
export interface MultiKeyContext {
  engine(): Promise<{ engine: LockEngine }>;
  forceDelete(fullKey: string): Promise<void>;
  ttl(): number;
}

/**
 * Multi-key locks (`acquire([...])`), run by describeLockConformance on every backend: all or
 * nothing, canonical order (no deadlock with opposite orders), one handle with a token per key
 * and one loss signal.
 */
export function describeMultiKeyCases(ctx: MultiKeyContext): void {
  const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;

  it('multi-key: one handle over every key, deduplicated in canonical order, a token per key; release frees all', async () => {
    const { engine: e } = await ctx.engine();
    const [a, b] = [key('mk-a'), key('mk-b')].sort();
    const h = await e.acquire([b, a, b]);
    expect(h.keys).toEqual([a, b]);
    expect([...h.fencingTokens.keys()]).toEqual([a, b]);
    expect(h.held).toBe(true);
    expect(await e.tryAcquire(a)).toBeNull();
    expect(await e.tryAcquire(b)).toBeNull();
    await h.release();
    expect(h.held).toBe(false);
    const again = await e.tryAcquire([a, b]);
    expect(again).not.toBeNull();
    for (const k of [a, b])
      expect(again!.fencingTokens.get(k)).toBeGreaterThan(h.fencingTokens.get(k)!);
    await again!.release();
  });

  it('multi-key: all or nothing: a busy key fails the grant within the wait and leaves the others free', async () => {
    const { engine: holder } = await ctx.engine();
    const { engine: e } = await ctx.engine();
    const [a, b, c] = [key('mk-a'), key('mk-b'), key('mk-c')].sort();
    const busy = await holder.acquire(c);
    await (await e.acquire(`${a}-warm`)).release(); // connected: the wait below is spent on the keys
    // A wait long enough that taking a and b (one quorum round each on Redlock, a session's first
    // requests on ZooKeeper) cannot use it all up on a loaded machine: it must end on busy c.
    await expect(e.acquire([a, b, c], { wait: 1_500 })).rejects.toBeInstanceOf(
      LockAcquireTimeoutError,
    );
    expect(await e.tryAcquire([a, b, c])).toBeNull();
    const free = await holder.tryAcquire([a, b]);
    expect(free).not.toBeNull();
    await free!.release();
    await busy.release();
  });

  it('multi-key: opposite orders from two processes never deadlock and never overlap', async () => {
    const { engine: e1 } = await ctx.engine();
    const { engine: e2 } = await ctx.engine();
    const [a, b] = [key('mk-x'), key('mk-y')];
    let inside = 0;
    let overlaps = 0;
    let done = 0;
    const worker = async (e: LockEngine, keys: string[]) => {
      for (let i = 0; i < 10; i++) {
        await e.withLock(
          keys,
          async () => {
            if (++inside > 1) overlaps++;
            await new Promise((r) => setImmediate(r));
            inside--;
            done++;
          },
          { wait: 20_000 },
        );
      }
    };
    await Promise.all([
      worker(e1, [a, b]),
      worker(e2, [b, a]),
      worker(e1, [b, a]),
      worker(e2, [a, b]),
    ]);
    expect(done).toBe(40);
    expect(overlaps).toBe(0);
  });

  it('multi-key: losing any key aborts the one signal with LockLostError', async () => {
    const { engine: e } = await ctx.engine();
    const [a, b] = [key('mk-a'), key('mk-b')].sort();
    const h = await e.acquire([a, b], { ttl: Math.max(ctx.ttl(), 300) });
    await ctx.forceDelete(`conf:${b}`);
    expect(await untilAborted(h.signal, 15_000)).toBeInstanceOf(LockLostError);
    expect(h.held).toBe(false);
    await h.release();
  });
}
