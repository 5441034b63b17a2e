import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { LockEngine } from '../../lib/core/lock-engine';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import type { BackendLock, LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { CrashableBackend, MutexProbe, untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { HolderProcess } from '../support/holder-harness';

/**
 * Cases both SQL backends must pass beyond the shared conformance suite: real holder processes
 * killed with SIGKILL, the database stopped, frozen and restarted, a skewed application clock, a
 * pool of 2 serving 50 waiters, one renewal statement per watchdog tick, and hostile input.
 * Each backend's spec supplies the fixture (its private server and a few admin queries).
 */
export interface LoggedStatement {
  sql: string;
  values?: unknown[];
}

export interface SqlFixture {
  kind: 'mysql' | 'postgres';
  /** Driver connection options of the private server (for the holder child process). */
  connection: Record<string, unknown>;
  /** A backend over a NEW pool (another process, as far as locks go); `log` gets every statement it sends. */
  create(options?: {
    poolSize?: number;
    table?: string;
    createTable?: boolean;
    sweepInterval?: number;
  }): { backend: LockBackend; log: LoggedStatement[] };
  /** `new <Backend>(options)` as a user would call it (bad input). */
  construct(options: unknown): LockBackend;
  /** The DDL statements a DBA runs for `table` (createTable: false). */
  ddl(table: string): readonly string[];
  /** A raw driver pool (for constructor argument checks). */
  rawClient(): unknown;
  /** Driver objects that look like a pool but are the wrong kind (mysql2 callback pool, pg Client). */
  wrongClients(): unknown[];
  /** Admin: runs one statement (no values) on the admin pool. */
  exec(sql: string): Promise<void>;
  /** Admin: deletes one holder row behind its owner's back. */
  deleteOwner(owner: string): Promise<void>;
  holderRows(fullKey: string, table?: string): Promise<number>;
  /** Waiters' tickets on `fullKey` right now (rows in mode 'queued', live or not). */
  tickets(fullKey: string): Promise<number>;
  /** Admin: writes the rows an abandoned holder of `fullKey` leaves behind, expired `agoMs` ago. */
  insertExpired(fullKey: string, agoMs: number): Promise<void>;
  /** Rows about this key in every table of the backend (holders, and MySQL's mutex rows). */
  residue(fullKey: string): Promise<number>;
  /** ms left on the key's holder row, by the server's clock. */
  msLeft(fullKey: string): Promise<number>;
  tableExists(table: string): Promise<boolean>;
  /** True for the backend's renew statement. */
  isRenew(statement: LoggedStatement): boolean;
  /** Locks carried by one renew statement. */
  renewSize(statement: LoggedStatement): number;
  /** Number of open LISTEN connections (PostgreSQL only). */
  listeners?(): Promise<number>;
  server: { stop(): Promise<void>; start(): Promise<void>; pause(): void; resume(): void };
  closeAll(): Promise<void>;
  destroy(): Promise<void>;
}

export function describeSqlBackend(name: string, setup: () => Promise<SqlFixture>): void {
  describe(`${name}: SQL backend`, () => {
    let f: SqlFixture;
    let engines: LockEngine[] = [];
    const holders = new Set<HolderProcess>();

    beforeAll(async () => {
      f = await setup();
    });
    afterEach(async () => {
      await Promise.all([...holders].map((h) => h.kill()));
      holders.clear();
      await Promise.all(engines.map((e) => e.close()));
      engines = [];
    });
    afterAll(async () => {
      await f?.closeAll();
      await f?.destroy();
    });

    const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;
    function engine(
      options: Parameters<SqlFixture['create']>[0] = {},
      wrap?: (b: LockBackend) => LockBackend,
      operationTimeout?: number,
    ) {
      const { backend: inner, log } = f.create(options);
      const backend = wrap ? wrap(inner) : inner;
      const e = new LockEngine({
        backend,
        keyPrefix: '',
        defaults: { ttl: 2_000, wait: 5_000 },
        operationTimeout,
      });
      engines.push(e);
      return { engine: e, backend, inner, log };
    }

    /** Starts a holder in a separate OS process; resolves with it and its fencing token once it holds `k`. */
    async function holderProcess(
      k: string,
      ttl: number,
    ): Promise<{ holder: HolderProcess; fence: bigint }> {
      const holder = HolderProcess.start(join(__dirname, 'sql-holder.process.ts'), [
        f.kind,
        JSON.stringify(f.connection),
        k,
        String(ttl),
      ]);
      holders.add(holder);
      const held = await holder.next('held');
      return { holder, fence: BigInt(held.fence as string) };
    }

    it('a SIGKILLed holder process: its lock frees after its ttl, is taken over, and the next fence is larger', async () => {
      const { engine: e } = engine();
      const k = key('killed');
      const ttl = 1_000;
      const { holder, fence } = await holderProcess(k, ttl);
      // Alive, the child's watchdog keeps the lock past several ttls.
      await new Promise((r) => setTimeout(r, ttl * 2)); // time itself is under test
      expect(await e.tryAcquire(k)).toBeNull();
      await holder.kill();
      const next = await e.acquire(k, { wait: 10_000 });
      expect(next.fencingToken > fence).toBe(true);
      expect(await f.holderRows(k)).toBe(1); // the dead holder's row was taken over, not left behind
      await next.release();
      expect(await f.residue(k)).toBe(0);
    });

    it('database stopped while a lock is held and a waiter waits: the waiter gets LockBackendUnavailableError, the holder loses; restart heals', async () => {
      const a = engine({}, undefined, 1_000);
      const b = engine({}, undefined, 1_000);
      const k = key('down');
      const held = await a.engine.acquire(k, { ttl: 600 });
      const waiting = b.engine.acquire(k, { wait: 1_500 });
      await eventually(() => b.log.length > 0);
      await f.server.stop();
      try {
        await expect(waiting).rejects.toBeInstanceOf(LockBackendUnavailableError);
        expect(await untilAborted(held.signal, 30_000)).toBeInstanceOf(LockLostError);
      } finally {
        await f.server.start();
      }
      // Same engines, same pools: no restart of the application.
      const k2 = key('after-restart');
      const h = await eventually(() => b.engine.acquire(k2, { wait: 1_000 }), 60_000, 200);
      const next = await eventually(() => a.engine.acquire(k, { wait: 1_000 }), 60_000, 200);
      expect(next.fencingToken > held.fencingToken).toBe(true);
      await Promise.all([h.release(), next.release()]);
      // PostgreSQL: the waiter's backend re-opened its LISTEN connection by itself.
      if (f.listeners) await eventually(async () => (await f.listeners!()) === 1, 30_000, 100);
    });

    it('database frozen (SIGSTOP): an acquire fails with LockBackendUnavailableError within its budget; SIGCONT heals', async () => {
      const a = engine({}, undefined, 800);
      const warm = await a.engine.acquire(key('warm'));
      await warm.release();
      f.server.pause();
      try {
        await expect(a.engine.acquire(key('frozen'), { wait: 300 })).rejects.toBeInstanceOf(
          LockBackendUnavailableError,
        );
      } finally {
        f.server.resume();
      }
      const h = await eventually(
        () => a.engine.acquire(key('thawed'), { wait: 1_000 }),
        30_000,
        100,
      );
      await h.release();
    });

    it.each([3_600_000, -3_600_000])(
      'an application clock skewed by %i ms changes nothing: expiry follows the server clock',
      async (skew) => {
        const a = engine({}, (b) => new CrashableBackend(b));
        const b = engine();
        const k = key('skew');
        const ttl = 800;
        jest.useFakeTimers({
          now: Date.now() + skew,
          advanceTimers: true,
          doNotFake: [
            'setTimeout',
            'clearTimeout',
            'setInterval',
            'clearInterval',
            'setImmediate',
            'clearImmediate',
            'nextTick',
            'queueMicrotask',
            'performance',
            'hrtime',
          ],
        });
        try {
          const h = await a.engine.acquire(k, { ttl });
          const left = await f.msLeft(k);
          expect(left).toBeGreaterThan(0);
          expect(left).toBeLessThanOrEqual(ttl);
          jest.setSystemTime(Date.now() - 2 * skew); // the other process is skewed the other way
          expect(await b.engine.tryAcquire(k)).toBeNull(); // not expired early
          (a.backend as CrashableBackend).crashed = true; // the holder goes silent
          const next = await b.engine.acquire(k, { wait: 10_000 }); // freed after its ttl, not an hour later
          expect(next.fencingToken > h.fencingToken).toBe(true);
          await next.release();
        } finally {
          jest.useRealTimers();
        }
      },
    );

    it('a pool of 2 serves 50 waiters on one key: all finish one at a time, in arrival order, with growing fences; other keys stay acquirable', async () => {
      const { engine: e } = engine({ poolSize: 2 });
      const k = key('pool');
      const probe = new MutexProbe();
      const fences: bigint[] = [];
      const order: number[] = [];
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const first = e.withLock(k, () => gate);
      await eventually(() => e.heldCount === 1);
      const waiters = Array.from({ length: 50 }, (_, i) =>
        e.withLock(
          k,
          async (h) => {
            order.push(i);
            fences.push(h.fencingToken);
            await probe.criticalSection();
          },
          { wait: 60_000 },
        ),
      );
      // While 50 waiters wait, they hold no connection: another key is acquired through the same pool of 2.
      await new Promise((r) => setImmediate(r));
      const other = await e.acquire(key('other'), { wait: 5_000 });
      await other.release();
      // One LISTEN connection for this backend and its 50 waiters (PostgreSQL), not one per waiter.
      if (f.listeners)
        expect(await eventually(async () => (await f.listeners!()) === 1)).toBe(true);
      release();
      await Promise.all([first, ...waiters]);
      expect(probe.counter).toBe(50);
      expect(probe.maxConcurrent).toBe(1);
      expect(order).toEqual(Array.from({ length: 50 }, (_, i) => i)); // one process: served in arrival order
      for (let i = 1; i < fences.length; i++) expect(fences[i] > fences[i - 1]).toBe(true);
      expect(await f.residue(k)).toBe(0);
    });

    // Across processes the waiter that has waited longest wins (waiters' tickets), not whichever
    // woken waiter re-attempts first; each engine below has its own pool: to the server, a separate
    // process. Before tickets, six waiters came out in arrival order 1 time in 720.
    it('waiters of six processes are granted in the order they started waiting', async () => {
      const k = key('fifo');
      const held = await engine().engine.acquire(k, { ttl: 30_000 });
      const granted: number[] = [];
      const done: Promise<void>[] = [];
      for (let i = 0; i < 6; i++) {
        const { engine: e } = engine();
        done.push(e.withLock(k, async () => void granted.push(i), { wait: 60_000 }));
        // Waiter i has found the key busy and holds its ticket before waiter i + 1 starts.
        await eventually(async () => (await f.tickets(k)) === i + 1);
      }
      await held.release();
      await Promise.all(done);
      expect(granted).toEqual([0, 1, 2, 3, 4, 5]);
      expect(await f.residue(k)).toBe(0);
    });

    it('a waiting writer keeps the readers of other processes that come after it out: it is not starved', async () => {
      const k = key('writer');
      const read = await engine().engine.acquire(k, { mode: 'shared', ttl: 30_000 });
      const { engine: w } = engine();
      const { engine: r } = engine();
      const order: string[] = [];
      const writing = w.acquire(k, { wait: 60_000 }).then((h) => (order.push('writer'), h));
      await eventually(async () => (await f.tickets(k)) === 1);
      // Free for a reader by the holders alone; the writer's ticket is older.
      expect(await r.tryAcquire(k, { mode: 'shared' })).toBeNull();
      const reading = r
        .acquire(k, { mode: 'shared', wait: 60_000 })
        .then((h) => (order.push('reader'), h));
      await eventually(async () => (await f.tickets(k)) === 2);
      await read.release();
      const written = await writing;
      expect(order).toEqual(['writer']);
      expect(await f.tickets(k)).toBe(1); // the reader still waits
      await written.release();
      const second = await reading;
      expect(order).toEqual(['writer', 'reader']);
      expect(second.fencingToken > written.fencingToken).toBe(true);
      await second.release();
    });

    it('a waiter that gives up takes its ticket back: the next acquirer of the free key is not kept waiting for it', async () => {
      const k = key('gaveup');
      const held = await engine().engine.acquire(k, { ttl: 30_000 });
      const { engine: w } = engine();
      const giving = w.acquire(k, { wait: 1_000 });
      await eventually(async () => (await f.tickets(k)) === 1); // it waits, with a ticket
      await expect(giving).rejects.toThrow(LockAcquireTimeoutError);
      expect(await eventually(async () => (await f.tickets(k)) === 0)).toBe(true);
      await held.release();
      const next = await engine().engine.tryAcquire(k);
      expect(next).not.toBeNull();
      await next!.release();
    });

    it("a waiter's ticket is not a holder: inspect shows the holder alone and counts the waiter, list shows the holder, forceRelease removes the holder and the waiter is granted", async () => {
      const { engine: a, backend: ops } = engine();
      const k = key('ticket');
      const held = await a.acquire(k, { ttl: 30_000 });
      const waiting = engine().engine.acquire(k, { wait: 60_000 });
      await eventually(async () => (await f.tickets(k)) === 1);
      const seen = await ops.inspect!(k);
      expect(seen.holders.map((h) => h.owner)).toEqual([held.owner]);
      expect(seen.fencingToken).toBe(held.fencingToken);
      expect(seen.waiters).toBe(1); // the ticket
      expect(await ops.list!(k, 10)).toEqual([k]);
      expect(await ops.forceRelease!(k)).toBe(true);
      expect(await ops.forceRelease!(k)).toBe(false); // a ticket alone is nothing to remove
      expect(await ops.list!(k, 10)).toEqual([]);
      const next = await waiting; // still waiting, and granted once the key is free
      expect(next.fencingToken > held.fencingToken).toBe(true);
      await next.release();
    });

    it('one statement renews a whole batch, and the watchdog sends one renew statement per tick', async () => {
      let renewCalls = 0;
      const { engine: e, log } = engine({}, (b) =>
        Object.assign(Object.create(b) as LockBackend, {
          renew: (locks: readonly BackendLock[]) => {
            renewCalls++;
            return b.renew(locks);
          },
        }),
      );
      const keys = Array.from({ length: 20 }, (_, i) => key(`batch${i}`));
      const handles = await Promise.all(keys.map((k) => e.acquire(k, { ttl: 1_500 })));
      // Directly: 20 locks, one statement (MySQL sets the isolation level for it first).
      const other = f.create(); // its own log: the engine's watchdog may renew meanwhile
      const locks = () =>
        handles.map((h) => ({ key: h.key, owner: h.owner, mode: h.mode, ttl: 1_500 }));
      await other.backend.renew(locks()); // the first call also checks the schema
      other.log.length = 0;
      expect(await other.backend.renew(locks())).toEqual(handles.map(() => true));
      const direct = other.log.filter((s) => !/^SET TRANSACTION/.test(s.sql));
      expect(direct).toHaveLength(1);
      expect(f.isRenew(direct[0]) && f.renewSize(direct[0])).toBe(20);
      // Through the watchdog: every tick's renew(batch) is exactly one statement.
      const from = log.length;
      const callsBefore = renewCalls;
      await eventually(() => renewCalls - callsBefore >= 3, 20_000);
      expect(handles.every((h) => h.held)).toBe(true);
      await Promise.all(handles.map((h) => h.release()));
      // Once calls in flight have sent theirs, statements and calls match one to one (two per call never would).
      const renewals = () => log.slice(from).filter((s) => f.isRenew(s));
      await eventually(() => renewals().length === renewCalls - callsBefore, 5_000);
      expect(renewals().reduce((n, s) => n + f.renewSize(s), 0)).toBeGreaterThanOrEqual(20);
    });

    it('rows of keys nobody locks again are swept once expired for over a minute; younger and live rows are kept', async () => {
      const [abandoned, recent, live] = [key('abandoned'), key('recent'), key('live')];
      await (await engine({ sweepInterval: 0 }).engine.acquire(key('tables'))).release(); // creates the tables
      const { engine: e } = engine({ sweepInterval: 1_000 });
      await f.insertExpired(abandoned, 120_000);
      await f.insertExpired(recent, 1_000);
      const h = await e.acquire(live); // the first acquire starts the sweeper
      await eventually(async () => (await f.residue(abandoned)) === 0, 10_000);
      expect(await f.holderRows(recent)).toBe(1); // taken over by its next acquire, not swept yet
      expect(await f.holderRows(live)).toBe(1);
      const next = await e.acquire(recent, { wait: 0 });
      expect(await f.holderRows(recent)).toBe(1);
      await Promise.all([h.release(), next.release()]);
    });

    it('renew answers per lock in a mixed batch: ours and live true, deleted or foreign false', async () => {
      const { engine: e, backend } = engine();
      const [k1, k2, k3] = [key('m1'), key('m2'), key('m3')];
      const hs = await Promise.all([k1, k2, k3].map((k) => e.acquire(k)));
      await f.deleteOwner(hs[1].owner);
      const locks: BackendLock[] = hs.map((h) => ({
        key: h.key,
        owner: h.owner,
        mode: 'exclusive',
        ttl: 2_000,
      }));
      const foreign = { ...locks[0], owner: randomBytes(16).toString('hex') };
      expect(await backend.renew([...locks, foreign])).toEqual([true, false, true, false]);
      await Promise.all(hs.map((h) => h.release()));
    });

    it('inspect reports holders (owner, mode, ttl left by the server clock) and the last fence; forceRelease frees a key whatever its owner', async () => {
      const { engine: a, backend } = engine();
      const { engine: b } = engine();
      const k = key('inspect');
      const free = await backend.inspect!(k);
      expect(free).toEqual({
        key: k,
        held: false,
        mode: undefined,
        holders: [],
        fencingToken: undefined,
        waiters: 0,
      });
      const h = await a.acquire(k, { ttl: 5_000 });
      const seen = await backend.inspect!(k);
      expect(seen).toMatchObject({
        key: k,
        held: true,
        mode: 'exclusive',
        fencingToken: h.fencingToken,
      });
      expect(seen.holders).toHaveLength(1);
      expect(seen.holders[0]).toMatchObject({ owner: h.owner, mode: 'exclusive' });
      expect(seen.holders[0].remainingTtl).toBeGreaterThan(0);
      expect(seen.holders[0].remainingTtl).toBeLessThanOrEqual(5_000);
      // An operator frees it: the holder finds out at its next renewal, the next grant is fenced above it.
      expect(await backend.forceRelease!(k)).toBe(true);
      expect(await backend.forceRelease!(k)).toBe(false);
      expect(await untilAborted(h.signal, 10_000)).toBeInstanceOf(LockLostError);
      const next = await b.acquire(k, { wait: 0 });
      expect(next.fencingToken > h.fencingToken).toBe(true);
      // Shared holders: both listed, mode shared.
      await next.release();
      const r1 = await a.acquire(k, { mode: 'shared' });
      const r2 = await b.acquire(k, { mode: 'shared' });
      const shared = await backend.inspect!(k);
      expect(shared).toMatchObject({ held: true, mode: 'shared', fencingToken: r2.fencingToken });
      expect(shared.holders.map((x) => x.owner).sort()).toEqual([r1.owner, r2.owner].sort());
      await Promise.all([r1.release(), r2.release()]);
      expect((await backend.inspect!(k)).held).toBe(false);
    });

    it('fencing tokens keep growing across a database restart', async () => {
      const { engine: e } = engine();
      const k = key('restart-fence');
      const h = await e.acquire(k);
      await h.release();
      await f.server.stop();
      await f.server.start();
      const next = await eventually(() => e.acquire(k, { wait: 1_000 }), 60_000, 200);
      expect(next.fencingToken > h.fencingToken).toBe(true);
      await next.release();
    });

    it('keys up to 512 characters work (3-byte characters included); longer ones are rejected with the limit', async () => {
      const { engine: e, backend } = engine();
      const long = await e.acquire('€'.repeat(512), { wait: 0 });
      expect(await f.holderRows('€'.repeat(512))).toBe(1);
      await long.release();
      await expect(e.acquire('x'.repeat(513))).rejects.toMatchObject({
        name: 'InvalidLockOptionsError',
        option: 'key',
        message: expect.stringContaining('at most 512'),
      });
      const signal = new AbortController().signal;
      const direct = (k: string) =>
        backend.tryAcquire({
          key: k,
          owner: randomBytes(16).toString('hex'),
          mode: 'exclusive',
          ttl: 1_000,
          signal,
          onLost: () => undefined,
        });
      await expect(direct('y'.repeat(600))).rejects.toThrow(InvalidLockOptionsError);
      await expect(direct('y'.repeat(600))).rejects.toThrow(/at most 512/);
    });

    it('quotes, backslashes, emoji and SQL fragments are bound as values: distinct locks, stored verbatim, the table survives', async () => {
      const { engine: e } = engine();
      const base = key('hostile');
      const variants = [
        `${base}'`,
        `${base}''`,
        `${base}"`,
        `${base}\\`,
        `${base}\\'`,
        `${base}😀`,
        `${base}'; DROP TABLE distributed_locks; --`,
        `${base}%`,
        `${base}_`,
        `${base} `,
        `${base}  `,
        `${base}`.toUpperCase(),
        base,
        `${base}\`x\``,
        `${base}$1`,
        `${base}?`,
      ];
      const handles = [];
      for (const v of variants) handles.push(await e.acquire(v, { wait: 0 }));
      for (const v of variants) expect(await f.holderRows(v)).toBe(1);
      expect(await f.tableExists('distributed_locks')).toBe(true);
      await Promise.all(handles.map((h) => h.release()));
      for (const v of variants) expect(await f.residue(v)).toBe(0);
    });

    it('NUL, control characters and lone surrogates in keys are rejected, nothing is locked', async () => {
      const { engine: e } = engine();
      // A lone surrogate has no UTF-8 form: sent as U+FFFD, '\uD800' and '\uDBFF' would be one lock.
      for (const bad of ['a\u0000b', 'a\nb', 'a\u001fb', 'a\uD800', 'a\uDBFFb', '\uDC00']) {
        await expect(e.acquire(bad)).rejects.toMatchObject({
          name: 'InvalidLockOptionsError',
          option: 'key',
        });
      }
      expect(e.heldCount).toBe(0);
      const pair = await e.acquire(`${key('pair')}\uD83D\uDE00`, { wait: 0 }); // a proper pair (an emoji) is fine
      await pair.release();
    });

    it('options are checked: table must be a plain identifier, unknown options and wrong types fail clearly', () => {
      const pool = f.rawClient();
      for (const table of [
        'locks; DROP TABLE x',
        'public.locks',
        'Locks',
        '"locks"',
        '`locks`',
        '',
        'x'.repeat(49),
        'lock-s',
        '1locks',
        5,
        null,
      ]) {
        expect(() => f.construct({ client: pool, table })).toThrow(
          expect.objectContaining({ name: 'InvalidLockOptionsError', option: 'table' }),
        );
      }
      expect(() => f.construct({ client: pool, createTable: 'yes' })).toThrow(
        expect.objectContaining({ option: 'createTable' }),
      );
      for (const sweepInterval of [-1, 10, 1.5, '60000', Infinity]) {
        expect(() => f.construct({ client: pool, sweepInterval })).toThrow(
          expect.objectContaining({ option: 'sweepInterval' }),
        );
      }
      expect(() => f.construct({ client: pool, colour: 'red' })).toThrow(
        expect.objectContaining({ option: 'colour' }),
      );
      expect(() => f.construct({ client: {} })).toThrow(
        expect.objectContaining({ option: 'client' }),
      );
      for (const client of f.wrongClients())
        expect(() => f.construct({ client })).toThrow(
          expect.objectContaining({ option: 'client' }),
        );
      expect(() => f.construct(undefined)).toThrow(InvalidLockOptionsError);
      expect(() => f.construct({ client: pool, table: 'Locks' })).toThrow(
        /plain lower-case SQL identifier/,
      );
    });

    it('createTable: false works on tables a DBA created from the documented DDL, and fails clearly (creating nothing) without them', async () => {
      const missing = engine({ table: 'never_created', createTable: false });
      await expect(missing.engine.acquire(key('x'), { wait: 0 })).rejects.toMatchObject({
        name: 'LockBackendUnavailableError',
        message: expect.stringMatching(/never_created/),
      });
      expect(await f.tableExists('never_created')).toBe(false);
      for (const statement of f.ddl('dba_locks')) await f.exec(statement);
      const dba = engine({ table: 'dba_locks', createTable: false });
      const shared = engine();
      const k = key('dba');
      const h = await dba.engine.acquire(k, { wait: 0 });
      expect(await f.holderRows(k, 'dba_locks')).toBe(1);
      const elsewhere = await shared.engine.acquire(k, { wait: 0 }); // another table is another lock space
      await Promise.all([h.release(), elsewhere.release()]);
    });
  });
}
