import { randomBytes } from 'node:crypto';
import { LockEngine } from '../../lib/core/lock-engine';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { LockNotHeldError } from '../../lib/errors/lock-not-held.error';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { eventually } from '../support/eventually';
import { CrashableBackend, untilAborted, MutexProbe } from './conformance-tools';
import { describeListCases } from './list-cases';
import { describeMultiKeyCases } from './multi-key-cases';
import { describeSemaphoreCases } from './semaphore-cases';

/**
 * The one conformance suite every backend runs unchanged. Each case builds engines over fresh
 * backends (fresh clients: "other processes") from the fixture, on keys unique to the case.
 */
export interface ConformanceFixture {
  /** A new backend over a new client to the same servers: another process, as far as locks go. */
  createBackend(): LockBackend | Promise<LockBackend>;
  /** Deletes a lock's state behind its holder's back (an operator's DEL), by full key. */
  forceDelete(fullKey: string): Promise<void>;
  /** Makes the process behind `backend` go silent without releasing (e.g. stop its session keepalive). */
  crash?(backend: LockBackend): Promise<void>;
  /** Makes the servers unreachable, and brings them back. Omitted where the backend cannot be down (memory). */
  outage?: { stop(): Promise<void>; start(): Promise<void> };
  /** A ttl short enough for expiry cases (ms). Session-based backends pass their session ttl. Default 400. */
  ttl?: number;
  /** Closes every client the fixture created. */
  closeAll(): Promise<void>;
}

export interface ConformanceFeatures {
  /** The fixture can take the servers down (fixture.outage). Default true; false only for in-process backends. */
  outage?: boolean;
}

/** One backend's run of the suite: its name, its fixture, and what it cannot be asked to do. */
export interface ConformanceOptions {
  readonly name: string;
  /** Starts the backend's servers and says how to make backends over them. */
  readonly setup: () => Promise<ConformanceFixture>;
  /** Stops what setup started. */
  readonly teardown?: () => Promise<void>;
  readonly features?: ConformanceFeatures;
}

export function describeLockConformance(options: ConformanceOptions): void {
  const { name, setup, teardown = async () => undefined, features = {} } = options;
  describe(`${name}: lock conformance`, () => {
    let fixture: ConformanceFixture;
    let engines: LockEngine[] = [];
    let ttl = 400;
    let caps: LockBackend['capabilities'];

    beforeAll(async () => {
      fixture = await setup();
      ttl = fixture.ttl ?? 400;
      const probe = await fixture.createBackend();
      caps = probe.capabilities;
      await probe.close();
    });

    afterEach(async () => {
      await Promise.all(engines.map((e) => e.close()));
      engines = [];
    });

    afterAll(async () => {
      await fixture?.closeAll();
      await teardown();
    });

    const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;
    async function engine(
      wrap?: (b: LockBackend) => LockBackend,
      extra: Partial<ConstructorParameters<typeof LockEngine>[0]> = {},
    ) {
      const inner = await fixture.createBackend();
      const backend = wrap ? wrap(inner) : inner;
      const e = new LockEngine({
        backend,
        keyPrefix: 'conf:',
        defaults: { ttl: Math.max(ttl, 2_000), wait: 5_000 },
        ...extra,
      });
      engines.push(e);
      return { engine: e, backend, inner };
    }

    const extra = {
      engine: () => engine(),
      forceDelete: (k: string) => fixture.forceDelete(k),
      ttl: () => ttl,
    };
    describeMultiKeyCases(extra);
    describeSemaphoreCases(extra);
    describeListCases(extra);

    it('grants a handle with key, mode, a bigint fencing token, a live signal and held=true', async () => {
      const { engine: e } = await engine();
      const k = key('fields');
      const h = await e.acquire(k);
      expect(h.key).toBe(k);
      expect(h.mode).toBe('exclusive');
      expect(typeof h.fencingToken).toBe('bigint');
      expect(h.fencingToken > 0n).toBe(true);
      expect(h.signal.aborted).toBe(false);
      expect(h.held).toBe(true);
      expect(h.owner).toMatch(/^[0-9a-f]{32}$/);
      await h.release();
      expect(h.held).toBe(false);
      expect(h.signal.aborted).toBe(false);
    });

    it('mutual exclusion: 8 contenders in 2 processes never overlap and lose no update', async () => {
      const a = await engine();
      const b = await engine();
      const k = key('mutex');
      const probe = new MutexProbe();
      const rounds = 5;
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (async () => {
            const e = i % 2 === 0 ? a.engine : b.engine;
            for (let r = 0; r < rounds; r++)
              await e.withLock(k, () => probe.criticalSection(), { wait: 30_000 });
          })(),
        ),
      );
      expect(probe.maxConcurrent).toBe(1);
      expect(probe.counter).toBe(8 * rounds);
    });

    it('shared/exclusive: readers share, a writer excludes readers and writers (or shared is rejected clearly)', async () => {
      const a = await engine();
      const b = await engine();
      const k = key('rw');
      if (!caps.shared) {
        await expect(a.engine.acquire(k, { mode: 'shared' })).rejects.toBeInstanceOf(
          InvalidLockOptionsError,
        );
        await expect(a.engine.acquire(k, { mode: 'shared' })).rejects.toMatchObject({
          option: 'mode',
        });
        return;
      }
      const r1 = await a.engine.acquire(k, { mode: 'shared' });
      const r2 = await b.engine.acquire(k, { mode: 'shared', wait: 0 });
      expect(r2.mode).toBe('shared');
      expect(await b.engine.tryAcquire(k)).toBeNull();
      await r1.release();
      expect(await a.engine.tryAcquire(k)).toBeNull();
      await r2.release();
      const w = await a.engine.acquire(k, { wait: 2_000 });
      expect(await b.engine.tryAcquire(k, { mode: 'shared' })).toBeNull();
      expect(await b.engine.tryAcquire(k)).toBeNull();
      await w.release();
      const r3 = await b.engine.acquire(k, { mode: 'shared', wait: 2_000 });
      await r3.release();
    });

    it('shared/exclusive under load: readers overlap each other, never a writer', async () => {
      const a = await engine();
      const b = await engine();
      const k = key('rwload');
      if (!caps.shared)
        return expect(a.engine.tryAcquire(k, { mode: 'shared' })).rejects.toMatchObject({
          option: 'mode',
        });
      const probe = new MutexProbe();
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (async () => {
            const e = i % 2 === 0 ? a.engine : b.engine;
            const mode = i < 5 ? 'shared' : 'exclusive';
            for (let r = 0; r < 4; r++)
              await e.withLock(k, () => probe.section(mode), { mode, wait: 30_000 });
          })(),
        ),
      );
      expect(probe.writerOverlaps).toBe(0);
      expect(probe.counter).toBe(3 * 4);
    });

    it('expires the lock of a holder that went silent; the next owner gets a larger fencing token', async () => {
      const a = await engine((b) => new CrashableBackend(b), { defaults: { ttl, wait: 5_000 } });
      const b = await engine();
      const k = key('expiry');
      const h = await a.engine.acquire(k, { ttl });
      (a.backend as CrashableBackend).crashed = true;
      await fixture.crash?.(a.inner);
      const next = await b.engine.acquire(k, {
        ttl: Math.max(ttl, 2_000),
        wait: 20 * ttl + 10_000,
      });
      expect(next.fencingToken > h.fencingToken).toBe(true);
      const reason = await untilAborted(h.signal, 20 * ttl + 10_000);
      expect(reason).toBeInstanceOf(LockLostError);
      expect(h.held).toBe(false);
      await next.release();
    });

    it('the watchdog keeps a lock past its ttl while held', async () => {
      const a = await engine();
      const b = await engine();
      const k = key('renew');
      const h = await a.engine.acquire(k, { ttl });
      await new Promise((r) => setTimeout(r, ttl * 3)); // time itself is what is under test here
      expect(h.held).toBe(true);
      expect(h.signal.aborted).toBe(false);
      expect(await b.engine.tryAcquire(k)).toBeNull();
      await h.release();
      const h2 = await b.engine.acquire(k, { wait: 2_000 });
      await h2.release();
    });

    it('release and renew act only for the owner', async () => {
      const a = await engine();
      const b = await engine();
      const k = key('owner');
      const h = await a.engine.acquire(k);
      const stranger = {
        key: `conf:${k}`,
        owner: randomBytes(16).toString('hex'),
        mode: 'exclusive' as const,
        ttl: 5_000,
      };
      await b.backend.release(stranger);
      expect(await b.backend.renew([stranger])).toEqual([false]);
      expect(await b.engine.tryAcquire(k)).toBeNull();
      expect(h.held).toBe(true);
      expect(await a.backend.renew([{ ...stranger, owner: h.owner }])).toEqual([true]);
      await h.release();
    });

    it('release is idempotent; extend after release throws LockNotHeldError', async () => {
      const { engine: e } = await engine();
      const k = key('twice');
      const h = await e.acquire(k);
      await h.extend();
      await h.release();
      await h.release();
      expect(h.held).toBe(false);
      await expect(h.extend()).rejects.toBeInstanceOf(LockNotHeldError);
      const again = await e.acquire(k, { wait: 0 });
      await again.release();
    });

    it('re-enters in the same async context with the same token and no backend round trip', async () => {
      const a = await engine((b) => new CrashableBackend(b));
      const b = await engine();
      const k = key('reentrant');
      const spy = a.backend as CrashableBackend;
      await a.engine.withLock(k, async (outer) => {
        const before = spy.acquireCalls;
        const inner = await a.engine.acquire(k, { wait: 0 });
        expect(spy.acquireCalls).toBe(before);
        expect(inner.fencingToken).toBe(outer.fencingToken);
        await inner.release();
        expect(outer.held).toBe(true);
        expect(await b.engine.tryAcquire(k)).toBeNull();
      });
      const free = await b.engine.acquire(k, { wait: 2_000 });
      await free.release();
    });

    it('another async context of the same process is another owner', async () => {
      const { engine: e } = await engine();
      const k = key('contexts');
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const holding = e.withLock(k, () => gate);
      await eventually(() => e.heldCount === 1);
      expect(await e.tryAcquire(k)).toBeNull();
      release();
      await holding;
      const h = await e.acquire(k, { wait: 0 });
      await h.release();
    });

    it('parallel branches of one owning call never re-enter each other’s plain acquires (issue 14.5)', async () => {
      const { engine: e } = await engine();
      const k = key('branches');
      const probe = new MutexProbe();
      const branch = async (late: boolean) => {
        if (late) await new Promise((r) => setImmediate(r));
        const h = await e.acquire(k, { wait: 10_000 });
        try {
          await probe.criticalSection();
        } finally {
          await h.release();
        }
      };
      await e.withLock(key('request'), () =>
        Promise.all([branch(false), branch(true), branch(true)]),
      );
      expect(probe.maxConcurrent).toBe(1);
      expect(probe.counter).toBe(3);
    });

    it('wait near the maximum (2147483548 ms) keeps waiting and gets the lock on release (issue 14.6)', async () => {
      const { engine: e } = await engine();
      const k = key('huge-wait');
      const holder = await e.acquire(k);
      let settled: unknown = 'pending';
      const waiter = e.acquire(k, { wait: 2_147_483_548 });
      waiter.then(
        () => (settled = 'granted'),
        (error: unknown) => (settled = error),
      );
      // An overflowing timer fired after 1 ms; this is the time it would need to show itself.
      await new Promise((r) => setTimeout(r, 50));
      expect(settled).toBe('pending');
      await holder.release();
      const h = await waiter;
      expect(h.held).toBe(true);
      await h.release();
    });

    it('fencing tokens grow across holders, processes and releases', async () => {
      const a = await engine();
      const b = await engine();
      const k = key('fence');
      const tokens: bigint[] = [];
      for (let i = 0; i < 6; i++) {
        const h = await (i % 2 ? b : a).engine.acquire(k, { wait: 2_000 });
        tokens.push(h.fencingToken);
        await h.release();
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
    });

    it('signals a lost lock through handle.signal when its state is deleted behind its back', async () => {
      const { engine: e } = await engine();
      const k = key('lost');
      const h = await e.acquire(k, { ttl });
      await fixture.forceDelete(`conf:${k}`);
      const reason = await untilAborted(h.signal, 20 * ttl + 10_000);
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).key).toBe(k);
      expect(h.held).toBe(false);
      await expect(h.extend()).rejects.toBeInstanceOf(LockLostError);
      await h.release();
    });

    it('withLock rejects with LockLostError as soon as the lock is lost', async () => {
      const { engine: e } = await engine();
      const k = key('lostwith');
      const never = new Promise<void>(() => undefined);
      const run = e.withLock(
        k,
        async () => {
          await fixture.forceDelete(`conf:${k}`);
          await never;
        },
        { ttl },
      );
      await expect(run).rejects.toBeInstanceOf(LockLostError);
    });

    it('wait is a deadline: a busy lock ends in LockAcquireTimeoutError and leaves no residue', async () => {
      const a = await engine();
      const b = await engine();
      const k = key('timeout');
      const h = await a.engine.acquire(k);
      await expect(b.engine.acquire(k, { wait: 300 })).rejects.toBeInstanceOf(
        LockAcquireTimeoutError,
      );
      await expect(b.engine.acquire(k, { wait: 0 })).rejects.toMatchObject({
        code: 'LOCK_ACQUIRE_TIMEOUT',
        key: k,
      });
      expect(await b.engine.tryAcquire(k)).toBeNull();
      await h.release();
      const next = await b.engine.acquire(k, { wait: 2_000 });
      expect(next.fencingToken > h.fencingToken).toBe(true);
      await next.release();
    });

    it('an AbortSignal cancels a wait with its reason and leaves no residue', async () => {
      const a = await engine();
      const b = await engine((x) => new CrashableBackend(x));
      const k = key('abort');
      const h = await a.engine.acquire(k);
      const controller = new AbortController();
      const waiting = b.engine.acquire(k, { wait: 30_000, signal: controller.signal });
      await (b.backend as CrashableBackend).acquireStarted;
      const reason = new Error('caller gave up');
      controller.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      await h.release();
      const c = await engine();
      const next = await c.engine.acquire(k, { wait: 2_000 });
      await next.release();
    });

    it('rejects bad input with InvalidLockOptionsError naming the option, and locks nothing', async () => {
      const { engine: e } = await engine();
      const k = key('bad');
      const bad: [Record<string, unknown>, string][] = [
        [{ ttl: 0 }, 'ttl'],
        [{ ttl: -5 }, 'ttl'],
        [{ ttl: Number.NaN }, 'ttl'],
        [{ ttl: Infinity }, 'ttl'],
        [{ ttl: '100' }, 'ttl'],
        [{ wait: -1 }, 'wait'],
        [{ wait: 1.5 }, 'wait'],
        [{ mode: 'upgradable' }, 'mode'],
        [{ backend: 'nope' }, 'backend'],
        [{ maxHold: 0 }, 'maxHold'],
        [{ colour: 'red' }, 'options.colour'],
      ];
      for (const [options, option] of bad) {
        await expect(e.acquire(k, options as never)).rejects.toMatchObject({
          name: 'InvalidLockOptionsError',
          option,
        });
      }
      await expect(e.acquire('')).rejects.toMatchObject({ option: 'key' });
      await expect(e.acquire('x'.repeat(10_000))).rejects.toMatchObject({ option: 'key' });
      await expect(e.acquire('bad\nkey')).rejects.toMatchObject({ option: 'key' });
      await expect(e.acquire('lone\uD800')).rejects.toMatchObject({ option: 'key' });
      await expect(e.acquire(undefined as never)).rejects.toBeInstanceOf(InvalidLockOptionsError);
      expect(e.heldCount).toBe(0);
      const h = await e.acquire(k, { wait: 0 });
      await h.release();
    });

    it('keys that differ only in tricky characters are different locks', async () => {
      const { engine: e } = await engine();
      const base = key('tricky');
      const variants = [
        base,
        `${base}/x`,
        `${base}:x`,
        `${base}{x}`,
        `${base}..`,
        `${base}*`,
        `${base} x`,
        `${base}é`,
        `${base}%2F`,
      ];
      const handles = [];
      for (const v of variants) handles.push(await e.acquire(v, { wait: 0 }));
      expect(new Set(handles.map((h) => h.key)).size).toBe(variants.length);
      await Promise.all(handles.map((h) => h.release()));
    });

    if (features.outage !== false) {
      it('backend down: LockBackendUnavailableError within the wait budget, held locks signal loss, recovery without restart', async () => {
        if (!fixture.outage)
          throw new Error('this fixture declares outages but has no outage.stop/start');
        const a = await engine(undefined, { operationTimeout: 1_000 });
        const held = await a.engine.acquire(key('down-held'), { ttl });
        await fixture.outage.stop();
        try {
          const started = Date.now();
          await expect(a.engine.acquire(key('down'), { wait: 500 })).rejects.toBeInstanceOf(
            LockBackendUnavailableError,
          );
          // The deadline contract (max(wait + 100, operationTimeout) = 1 s), with slack for a loaded machine: not a speed claim.
          expect(Date.now() - started).toBeLessThan(6_000);
          const reason = await untilAborted(held.signal, 20 * ttl + 30_000);
          expect(reason).toBeInstanceOf(LockLostError);
        } finally {
          await fixture.outage.start();
        }
        const k = key('down-after');
        const h = await eventually(() => a.engine.acquire(k, { wait: 1_000 }), 60_000, 200);
        expect(h.held).toBe(true);
        await h.release();
      });
    }
  });
}
