import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { SteadyMap, SteadySet } from '../../lib/backend-kit/steady-collections';

type Collection = { readonly size: number };
const isCollection = (v: unknown): v is Collection =>
  v instanceof Map || v instanceof Set || v instanceof SteadyMap || v instanceof SteadySet;

/** Every Map or Set (or steady one) an object keeps in its own fields (and one level into their objects). */
function collections(o: object, depth = 1): Collection[] {
  const out: Collection[] = [];
  for (const value of Object.values(o)) {
    if (isCollection(value)) out.push(value);
    else if (depth > 0 && value !== null && typeof value === 'object')
      out.push(...collections(value, depth - 1));
  }
  return out;
}

/**
 * Issue 14.3: the memory backend kept a fence entry per key ever used (572 B forever; 100k request
 * ids = +54 MiB). Tokens must grow per key with state bounded by the locks held now.
 */
describe('memory backend: per-key state ends with the lock (issue 14.3)', () => {
  it('10k distinct keys acquired and released leave every internal map empty', async () => {
    const backend = new MemoryLockBackend();
    const engine = new LockEngine({ backend, defaults: { wait: 0 } });
    for (let i = 0; i < 10_000; i++) {
      const h = await engine.acquire(`request:${i}`);
      await h.release();
    }
    const sizes = collections(backend).map((c) => c.size);
    expect(sizes.length).toBeGreaterThan(0);
    expect(sizes).toEqual(sizes.map(() => 0));
    expect(engine.heldCount).toBe(0);
    await engine.close();
  }, 120_000);

  it('tokens still grow strictly per key, across holders, expiry and other keys', async () => {
    let now = 0;
    const backend = new MemoryLockBackend({ now: () => now });
    const lock = (key: string, owner: string, mode: 'exclusive' | 'shared' = 'exclusive') => ({
      key,
      owner,
      mode,
      ttl: 100,
    });
    const attempt = (key: string, owner: string, mode: 'exclusive' | 'shared' = 'exclusive') =>
      backend.tryAcquire({
        ...lock(key, owner, mode),
        signal: new AbortController().signal,
        onLost: () => undefined,
      });
    const tokens: bigint[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await attempt('k', `o${i}`, i % 3 === 0 ? 'shared' : 'exclusive');
      if (!r.acquired) throw new Error('busy');
      tokens.push(r.fencingToken);
      await attempt(`other:${i}`, 'x');
      if (i % 2) await backend.release(lock('k', `o${i}`, i % 3 === 0 ? 'shared' : 'exclusive'));
      else now += 101; // expiry instead of release
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
    // A second backend instance in the same process continues above the first (one counter per process).
    const other = await new MemoryLockBackend().tryAcquire({
      ...lock('k', 'z'),
      signal: new AbortController().signal,
      onLost: () => undefined,
    });
    expect(other.acquired && other.fencingToken > tokens[tokens.length - 1]).toBe(true);
  });
});
