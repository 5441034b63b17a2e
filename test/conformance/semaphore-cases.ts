import { randomBytes } from 'node:crypto';
import type { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from './conformance-tools';
import type { MultiKeyContext } from './multi-key-cases';

/**
 * Semaphores (`permits: N`), run by describeLockConformance on every backend: at most N holders,
 * all N permits used under load, try-once when full, a grant is a handle like a lock's.
 */
export function describeSemaphoreCases(ctx: MultiKeyContext): void {
  const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;

  it('semaphore: at most N hold at once across two processes, and all N permits get used', async () => {
    const engines = [(await ctx.engine()).engine, (await ctx.engine()).engine];
    const k = key('sem');
    let inside = 0;
    let most = 0;
    let done = 0;
    // The first holders stay inside until the third permit is granted (or 30 s pass, and the case
    // then fails on `most`): "all N permits get used" must not depend on how fast a loaded machine
    // hands out grants (ZooKeeper's Curator layout grants one at a time through a mutex).
    let filling: (() => void)[] | undefined = [];
    const fill = () => {
      filling?.forEach((go) => go());
      filling = undefined;
    };
    const giveUp = setTimeout(fill, 30_000);
    const worker = async (e: LockEngine) => {
      for (let i = 0; i < 6; i++) {
        await e.withLock(
          k,
          async () => {
            most = Math.max(most, ++inside);
            if (inside === 3) fill();
            if (filling) await new Promise<void>((go) => filling?.push(go));
            await new Promise((r) => setTimeout(r, 20));
            inside--;
            done++;
          },
          { permits: 3, wait: 60_000 },
        );
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => worker(engines[i % 2]))).finally(() =>
      clearTimeout(giveUp),
    );
    expect(done).toBe(48);
    expect(most).toBe(3);
  });

  it('semaphore: full means busy (tryAcquire null, acquire times out); a release frees one permit', async () => {
    const { engine: e } = await ctx.engine();
    const { engine: other } = await ctx.engine();
    const k = key('sem-full');
    const a = await e.acquire(k, { permits: 2 });
    const b = await other.acquire(k, { permits: 2 });
    expect(a.key).toBe(k);
    expect(typeof a.fencingToken).toBe('bigint');
    expect(await other.tryAcquire(k, { permits: 2 })).toBeNull();
    await expect(other.acquire(k, { permits: 2, wait: 150 })).rejects.toBeInstanceOf(
      LockAcquireTimeoutError,
    );
    const waiting = other.acquire(k, { permits: 2, wait: 10_000 });
    await a.release();
    const c = await waiting;
    expect(c.held).toBe(true);
    await Promise.all([b.release(), c.release()]);
  });

  it('semaphore: callers that name another N never hold more than the larger N at once', async () => {
    const { engine: e } = await ctx.engine();
    const { engine: other } = await ctx.engine();
    const k = key('sem-mixed');
    const one = await e.acquire(k, { permits: 1 });
    const holders: LockHandle[] = [];
    for (let i = 0; i < 2; i++) {
      // A backend that records N refuses the other N; one that does not counts each against its own.
      const h = await other.tryAcquire(k, { permits: 2 }).catch((error: unknown) => {
        expect(error).toMatchObject({ name: 'InvalidLockOptionsError', option: 'permits' });
        return null;
      });
      if (h) holders.push(h);
    }
    expect(holders.length).toBeLessThanOrEqual(1);
    await Promise.all([one.release(), ...holders.map((h) => h.release())]);
  });

  it('semaphore: a lost permit aborts its handle’s signal; bad permits are rejected naming the option', async () => {
    const { engine: e } = await ctx.engine();
    const k = key('sem-lost');
    const backend = e.backend();
    // A permit freed behind its holder's back (native layout, or the permit locks `<key>#<i>`);
    // permits: 1 is a semaphore of one like any other.
    for (const permits of [1, 2]) {
      const sem = `${k}-${permits}`;
      const s = await e.acquire(sem, { permits, ttl: Math.max(ctx.ttl(), 300) });
      if (backend.semaphore) expect(await backend.forceRelease!(`conf:${sem}`)).toBe(true);
      else for (let i = 0; i < permits; i++) await ctx.forceDelete(`conf:${sem}#${i}`);
      expect(await untilAborted(s.signal, 15_000)).toBeInstanceOf(LockLostError);
      await s.release();
    }
    for (const permits of [0, 1.5, -1, '2', 1_001]) {
      await expect(e.acquire(k, { permits: permits as number })).rejects.toMatchObject({
        name: 'InvalidLockOptionsError',
        option: 'permits',
      });
    }
    await expect(e.acquire(k, { permits: 2, mode: 'shared' })).rejects.toBeInstanceOf(
      InvalidLockOptionsError,
    );
    await expect(e.acquire([k, `${k}2`], { permits: 2 })).rejects.toBeInstanceOf(
      InvalidLockOptionsError,
    );
  });
}
