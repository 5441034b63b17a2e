import { InvalidLockOptionsError, LockEngine, LockLostError, MemoryLockBackend } from '../../lib';
import type { LockEvent } from '../../lib/operations';
import type { BackendLock } from '../../lib/backend-kit';
import { CrashableBackend, untilAborted } from '../conformance/conformance-tools';

/** Collects events; `next(type)` resolves with the next one of that type (or one already seen). */
class EventLog {
  readonly all: LockEvent[] = [];
  private waiters: { type: string; resolve: (e: LockEvent) => void }[] = [];
  readonly listener = (e: LockEvent) => {
    this.all.push(e);
    this.waiters = this.waiters.filter((w) => (w.type === e.type ? (w.resolve(e), false) : true));
  };
  of<T extends LockEvent['type']>(type: T): Extract<LockEvent, { type: T }>[] {
    return this.all.filter((e) => e.type === type) as Extract<LockEvent, { type: T }>[];
  }
  next<T extends LockEvent['type']>(type: T): Promise<Extract<LockEvent, { type: T }>> {
    const seen = this.of(type)[0];
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) =>
      this.waiters.push({ type, resolve: resolve as (e: LockEvent) => void }),
    );
  }
}

/** A memory backend whose releases fail while `failing` (a backend outage at release time). */
class FailingReleaseBackend extends CrashableBackend {
  failing = false;
  override async release(lock: BackendLock): Promise<void> {
    if (this.failing) throw new Error('connection reset');
    return super.release(lock);
  }
}

describe('lock events (core)', () => {
  let engine: LockEngine;
  afterEach(() => engine?.close());

  it('emits acquired, busy and released with timings, attempts and contention', async () => {
    const log = new EventLog();
    const backend = new CrashableBackend(new MemoryLockBackend());
    engine = new LockEngine({ backend, onEvent: log.listener });
    const first = await engine.acquire('order:1');
    expect(await engine.tryAcquire('order:1')).toBeNull();
    const waiting = engine.acquire('order:1', { wait: 5_000 });
    // Release only once the waiter has found it busy (its first attempt is the third call).
    while (backend.acquireCalls < 3) await new Promise((resolve) => setImmediate(resolve));
    await first.release();
    const second = await waiting;
    await second.release();

    const acquired = log.of('acquired');
    expect(acquired).toHaveLength(2);
    expect(acquired[0]).toMatchObject({
      key: 'order:1',
      backend: 'default',
      mode: 'exclusive',
      attempts: 1,
      contended: false,
      reentrant: false,
      fencingToken: 1n,
    });
    expect(acquired[1]).toMatchObject({
      key: 'order:1',
      fencingToken: 2n,
      contended: true,
      reentrant: false,
    });
    expect(acquired[1].attempts).toBeGreaterThanOrEqual(2);
    expect(acquired[1].waitMs).toBeGreaterThanOrEqual(0);
    expect(log.of('busy')).toEqual([
      expect.objectContaining({ key: 'order:1', timedOut: false, attempts: 1 }),
    ]);
    expect(log.of('released')).toHaveLength(2);
    expect(log.of('released')[0].heldMs).toBeGreaterThanOrEqual(0);
    expect(log.all.map((e) => e.type)).toEqual([
      'acquired',
      'busy',
      'released',
      'acquired',
      'released',
    ]);
  });

  it('re-entry is an acquired event with reentrant: true and no release until the last hold', async () => {
    const log = new EventLog();
    engine = new LockEngine({ backend: new MemoryLockBackend(), onEvent: log.listener });
    await engine.withLock('a', async () => {
      await engine.withLock('a', async () => undefined);
    });
    expect(log.of('acquired').map((e) => e.reentrant)).toEqual([false, true]);
    expect(log.of('released')).toHaveLength(1);
  });

  it('a timed-out wait is busy with timedOut: true; a bad option is acquireFailed', async () => {
    const log = new EventLog();
    engine = new LockEngine({ backend: new MemoryLockBackend(), onEvent: log.listener });
    const holder = await engine.acquire('k');
    await expect(engine.acquire('k', { wait: 60 })).rejects.toThrow('after waiting 60 ms');
    expect(log.of('busy')[0]).toMatchObject({ timedOut: true });
    await expect(engine.acquire('k', { ttl: -1 })).rejects.toBeInstanceOf(InvalidLockOptionsError);
    expect(log.of('acquireFailed')[0].error).toBeInstanceOf(InvalidLockOptionsError);
    await holder.release();
  });

  it('a listener of failures alone (the default log level) gets every failure, and only those', async () => {
    const log = new EventLog();
    engine = new LockEngine({ backend: new MemoryLockBackend() });
    engine.events.on(log.listener, ['acquireFailed', 'lost']);
    const holder = await engine.acquire('k');
    expect(await engine.tryAcquire('k')).toBeNull();
    await expect(engine.acquire('k', { wait: 30 })).rejects.toThrow('after waiting 30 ms');
    await expect(engine.acquire('k2', { ttl: -1 })).rejects.toBeInstanceOf(InvalidLockOptionsError);
    await holder.release();
    expect(log.all.map((e) => e.type)).toEqual(['acquireFailed']);
    expect(log.of('acquireFailed')[0]).toMatchObject({ key: 'k2', backend: 'default' });
    expect(log.of('acquireFailed')[0].waitMs).toBeGreaterThanOrEqual(0);
  });
  it('forceRelease frees the key, emits forceReleased, and the holder loses it at its next renewal', async () => {
    const log = new EventLog();
    const backend = new MemoryLockBackend();
    engine = new LockEngine({ backend, onEvent: log.listener });
    // A ttl far longer than any stall of a loaded CI's event loop: the renewal (at a third of it)
    // finds the key deleted, never the lock's own expiry first.
    const handle = await engine.acquire('stuck', { ttl: 3_000 });
    expect(await engine.operator.forceRelease('stuck')).toBe(true);
    expect(log.of('forceReleased')[0]).toMatchObject({ key: 'stuck', freed: true });
    const reason = await untilAborted(handle.signal, 10_000);
    expect(reason).toBeInstanceOf(LockLostError);
    const lost = await log.next('lost');
    expect(lost).toMatchObject({ key: 'stuck', mode: 'exclusive' });
    expect(lost.reason).toContain('renewal found it deleted');
    expect(await engine.operator.forceRelease('stuck')).toBe(false);
  });

  it('a failing backend: renewFailed, backendUnavailable once, lost, then backendRecovered', async () => {
    const log = new EventLog();
    const backend = new CrashableBackend(new MemoryLockBackend());
    engine = new LockEngine({ backend, onEvent: log.listener });
    const handle = await engine.acquire('job', { ttl: 120 });
    backend.crashed = true;
    const failed = await log.next('renewFailed');
    expect(failed.keys).toEqual(['job']);
    expect(await log.next('backendUnavailable')).toMatchObject({
      backend: 'default',
      operation: 'renew',
    });
    await untilAborted(handle.signal, 2_000);
    expect((await log.next('lost')).reason).toContain('ttl ran out');
    expect(log.of('backendUnavailable')).toHaveLength(1);
    backend.crashed = false;
    await engine.acquire('other');
    expect(await log.next('backendRecovered')).toMatchObject({ backend: 'default' });
  });

  it('a failed release is emitted as releaseFailed, even where the caller swallows it (withLock)', async () => {
    const log = new EventLog();
    const backend = new FailingReleaseBackend(new MemoryLockBackend());
    engine = new LockEngine({ backend, onEvent: log.listener });
    backend.failing = true;
    await expect(engine.withLock('x', async () => 'done')).resolves.toBe('done');
    expect(log.of('releaseFailed')[0]).toMatchObject({ key: 'x', during: 'release' });
    backend.failing = false;
  });

  it('a listener that throws does not break locking', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    engine = new LockEngine({
      backend: new MemoryLockBackend(),
      onEvent: () => {
        throw new Error('boom');
      },
    });
    await expect(engine.withLock('y', async () => 'ran')).resolves.toBe('ran');
    expect(warn).toHaveBeenCalledWith(
      "a lock event listener threw on 'acquired': Error: boom",
      'DistributedLockWarning',
    );
    warn.mockRestore();
  });
});

describe('inspect, forceRelease and list (memory backend)', () => {
  let engine: LockEngine;
  afterEach(() => engine?.close());

  it('inspect reports holders, remaining ttl, the last fencing token and this process waiters', async () => {
    engine = new LockEngine({ backend: new MemoryLockBackend() });
    const free = await engine.operator.inspect('order:9');
    expect(free).toMatchObject({
      key: 'lock:order:9',
      held: false,
      holders: [],
      backend: 'default',
      local: { holders: [], waiters: 0 },
    });
    const handle = await engine.acquire('order:9', { ttl: 5_000 });
    const waiter = engine.acquire('order:9', { wait: 5_000 });
    const report = await engine.operator.inspect('order:9');
    expect(report).toMatchObject({
      key: 'lock:order:9',
      held: true,
      mode: 'exclusive',
      fencingToken: handle.fencingToken,
    });
    expect(report.holders).toEqual([
      expect.objectContaining({ mode: 'exclusive', owner: handle.owner }),
    ]);
    expect(report.holders[0].remainingTtl).toBeGreaterThan(4_000);
    expect(report.local.holders).toEqual([
      expect.objectContaining({
        key: 'order:9',
        owner: handle.owner,
        fencingToken: handle.fencingToken,
        holds: 1,
      }),
    ]);
    expect(report.local.waiters).toBe(1);
    await handle.release();
    await (await waiter).release();
    // The memory backend keeps no per-key state once a key is free (bounded memory): no last token.
    expect(await engine.operator.inspect('order:9')).toMatchObject({
      held: false,
      fencingToken: undefined,
    });
  });

  it('shared holders are listed each', async () => {
    engine = new LockEngine({ backend: new MemoryLockBackend() });
    const a = engine.acquire('cfg', { mode: 'shared' });
    const b = await engine.runInScope(() => engine.acquire('cfg', { mode: 'shared' }));
    const report = await engine.operator.inspect('cfg');
    expect(report.mode).toBe('shared');
    expect(report.holders.map((h) => h.mode)).toEqual(['shared', 'shared']);
    await (await a).release();
    await b.release();
  });

  it('list returns held keys under a prefix, without the module keyPrefix', async () => {
    engine = new LockEngine({ backend: new MemoryLockBackend() });
    const h = await Promise.all(
      ['order:1', 'order:2', 'user:1'].map((k) => engine.runInScope(() => engine.acquire(k))),
    );
    expect((await engine.operator.list('order:')).sort()).toEqual(['order:1', 'order:2']);
    expect(await engine.operator.list('order:', undefined, 1)).toHaveLength(1);
    await h[0].release();
    expect(await engine.operator.list('order:')).toEqual(['order:2']);
    await Promise.all(h.map((x) => x.release()));
  });

  it('a backend without inspect/forceRelease/list says so, naming the backend', async () => {
    engine = new LockEngine({ backend: new CrashableBackend(new MemoryLockBackend()) });
    await expect(engine.operator.inspect('k')).rejects.toThrow(
      'a backend that implements inspect() (backend "default" is memory, which does not)',
    );
    await expect(engine.operator.forceRelease('k')).rejects.toThrow('implements forceRelease()');
    await expect(engine.operator.list('k')).rejects.toThrow('implements list()');
  });

  it('probe uses ping where the backend has it, else a tryAcquire + release round trip', async () => {
    engine = new LockEngine({
      backends: {
        default: new MemoryLockBackend(),
        plain: new CrashableBackend(new MemoryLockBackend()),
      },
    });
    const results = await engine.operator.probe();
    expect(results).toEqual([
      expect.objectContaining({ backend: 'default', kind: 'memory', status: 'up', via: 'ping' }),
      expect.objectContaining({ backend: 'plain', kind: 'memory', status: 'up', via: 'acquire' }),
    ]);
  });
});
