import { randomBytes } from 'node:crypto';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import type { MultiKeyContext } from './multi-key-cases';

/**
 * Inspection by listing (`operator.list(prefix, backend, limit)`), run by describeLockConformance
 * on every backend: a backend with list() names exactly the held keys under a prefix (exclusive,
 * shared and semaphore holds, each once), keeps to the limit and forgets a released key; one
 * without list() says so. Bad arguments are refused before any backend call.
 */
export function describeListCases(ctx: MultiKeyContext): void {
  it('inspection: list() names held locks, shared locks and semaphores once each, within the limit', async () => {
    const [a, b] = [(await ctx.engine()).engine, (await ctx.engine()).engine];
    const ns = `ls${randomBytes(4).toString('hex')}`;
    if (typeof a.backend('default').list !== 'function') {
      await expect(a.operator.list(ns)).rejects.toThrow(InvalidLockOptionsError);
      return;
    }
    const held = [
      await a.acquire(`${ns}:order:1`),
      await a.acquire(`${ns}:order:2`),
      await a.acquire(`${ns}:report`, { mode: 'shared' }),
      await b.acquire(`${ns}:report`, { mode: 'shared' }),
      await a.acquire(`${ns}:pool`, { permits: 3 }),
      await b.acquire(`${ns}:pool`, { permits: 3 }),
    ];
    const other = await a.acquire(`x${ns}:order:1`);
    // Without native semaphores a semaphore is permit locks (`pool#<i>`), and list() shows the
    // permits, and the permits record `pool#n` the holders share where the backend can keep it.
    const backend = a.backend('default');
    const record = backend.inspect && backend.capabilities.shared ? [`${ns}:pool#n`] : [];
    const permits = backend.semaphore ? [`${ns}:pool`] : [`${ns}:pool#`, `${ns}:pool#`, ...record];
    const all = (await b.operator.list(ns)).sort();
    expect(all.map((k) => k.replace(/#\d+$/, '#'))).toEqual([
      `${ns}:order:1`,
      `${ns}:order:2`,
      ...permits,
      `${ns}:report`,
    ]);
    expect((await b.operator.list(`${ns}:order:`)).sort()).toEqual([
      `${ns}:order:1`,
      `${ns}:order:2`,
    ]);
    expect((await b.operator.list(ns, undefined, 2)).length).toBe(2);
    expect(await b.operator.list(`${ns}:none`)).toEqual([]);
    await held[0].release();
    expect((await b.operator.list(`${ns}:order:`)).sort()).toEqual([`${ns}:order:2`]);
    for (const h of [...held.slice(1), other]) await h.release();
    expect(await b.operator.list(ns)).toEqual([]);
  });

  it('inspection: list() refuses a bad limit or prefix before asking the backend', async () => {
    const { engine } = await ctx.engine();
    const calls: unknown[] = [];
    const backend = engine.backend('default');
    const list = backend.list?.bind(backend);
    if (list) backend.list = (p, l) => (calls.push([p, l]), list(p, l));
    for (const limit of [Number.NaN, -1, 0, 1.5, Number.POSITIVE_INFINITY, '10', 1e9])
      await expect(engine.operator.list('p', undefined, limit as number)).rejects.toThrow(
        InvalidLockOptionsError,
      );
    for (const prefix of [42, null, '\0', 'a\ud800', 'x'.repeat(2_000)])
      await expect(engine.operator.list(prefix as string)).rejects.toThrow(InvalidLockOptionsError);
    expect(calls).toEqual([]);
  });
}
