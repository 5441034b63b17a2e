import { MemoryLockBackend } from '../backends/memory/memory.backend';
import { LockEngine } from '../core/lock-engine';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type {
  BackendAcquireResult,
  BackendAttempt,
  ElectionBackend,
} from '../interfaces/lock-backend.interface';

/** The memory backend without its native semaphore: the recipe builds one from permit locks. */
class NoNativeSemaphore extends MemoryLockBackend {
  override readonly semaphore = undefined as never;
}

/** The memory backend with a one-step multi-key grant that records the keys it was asked for. */
class OneStepMemory extends MemoryLockBackend {
  readonly batches: string[][] = [];
  async tryAcquireAll(requests: readonly BackendAttempt[]): Promise<BackendAcquireResult[]> {
    this.batches.push(requests.map((r) => r.key));
    return Promise.all(requests.map((r) => this.tryAcquire(r)));
  }
}

/** The memory backend with an election layout that records each campaign's proposal. */
class ElectionMemory extends MemoryLockBackend {
  readonly proposals: string[] = [];
  readonly election: ElectionBackend = {
    tryAcquire: (request, proposal) => {
      this.proposals.push(proposal);
      return this.tryAcquire(request);
    },
  };
}

const engines: LockEngine[] = [];
const engineOver = (backend: MemoryLockBackend) => {
  const engine = new LockEngine({ backend, defaults: { ttl: 1_000, wait: 0 } });
  engines.push(engine);
  return engine;
};
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

describe('semaphore recipe', () => {
  it('permits: 1 is a semaphore of one, not the plain lock of the key', async () => {
    const engine = engineOver(new MemoryLockBackend());
    const lock = await engine.acquire('s');
    const permit = await engine.acquire('s', { permits: 1 });
    expect(await engine.tryAcquire('s', { permits: 1 })).toBeNull();
    await Promise.all([lock.release(), permit.release()]);
  });

  it('a caller naming another N for a semaphore in use gets InvalidLockOptionsError naming permits', async () => {
    const engine = engineOver(new MemoryLockBackend());
    const held = await engine.acquire('n', { permits: 2 });
    await expect(engine.tryAcquire('n', { permits: 3 })).rejects.toBeInstanceOf(
      InvalidLockOptionsError,
    );
    await expect(engine.acquire('n', { permits: 3, wait: 1_000 })).rejects.toMatchObject({
      option: 'permits',
    });
    await held.release();
    const other = await engine.acquire('n', { permits: 3 });
    await other.release();
  });

  it('without a native semaphore, permits are the locks <key>#<i>: at most N hold', async () => {
    const backend = new NoNativeSemaphore();
    const engine = engineOver(backend);
    const a = await engine.acquire('q', { permits: 2 });
    const b = await engine.acquire('q', { permits: 2 });
    expect(await engine.tryAcquire('q', { permits: 2 })).toBeNull();
    const permits = (await backend.list('lock:q#', 10)).sort();
    // Beside the permits, the permits record their holders share (permits-record.ts).
    expect(permits).toEqual(['lock:q#0', 'lock:q#1', 'lock:q#n']);
    expect(a.key).toBe('q');
    await Promise.all([a.release(), b.release()]);
  });
});

describe('multi-key recipe', () => {
  it('takes every key in one step where the backend can, in canonical order, as one handle', async () => {
    const backend = new OneStepMemory();
    const engine = engineOver(backend);
    const handle = await engine.acquire(['b', 'a', 'b']);
    expect(backend.batches).toEqual([['lock:a', 'lock:b']]);
    expect(handle.keys).toEqual(['a', 'b']);
    expect([...handle.fencingTokens.keys()]).toEqual(['a', 'b']);
    expect(await engine.tryAcquire('a')).toBeNull();
    await handle.release();
    expect(await backend.list('lock:', 10)).toEqual([]);
  });

  it('all or nothing: a busy key leaves none of the others taken', async () => {
    const engine = engineOver(new MemoryLockBackend());
    const b = await engine.acquire('y');
    await expect(engine.acquire(['x', 'y', 'z'], { wait: 50 })).rejects.toMatchObject({
      name: 'LockAcquireTimeoutError',
    });
    const x = await engine.tryAcquire('x');
    expect(x).not.toBeNull();
    await Promise.all([b.release(), x!.release()]);
  });
});

describe('election recipe', () => {
  it("campaigns in the backend's election layout with the candidate's proposal", async () => {
    const backend = new ElectionMemory();
    const engine = engineOver(backend);
    const term = await engine.leadership('e', { proposal: 'node-1:42' }).whenLeader();
    expect(backend.proposals).toEqual(['node-1:42']);
    expect(term.key).toBe('election:e');
    await engine.leadership('e').resign();
  });

  it('on a backend without one, a campaign holds the plain lock election:<name>', async () => {
    const engine = engineOver(new MemoryLockBackend());
    await engine.leadership('p').whenLeader();
    expect(await engine.tryAcquire('election:p')).toBeNull();
    await engine.leadership('p').resign();
  });
});
