import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { mariaDbPools, postgresPools } from '../support/sql-pools';
import { HolderProcess, type HolderMessage } from '../support/holder-harness';

/**
 * Native SQL semaphores (holder rows with mode 'semaphore') beyond the conformance cases: four OS
 * processes of three workers each contend for a semaphore of 3 (never more than 3 inside, and 3
 * inside at some moment), inspect and forceRelease of a semaphore key, list(prefix, limit), and the
 * PostgreSQL upgrade of a table created before semaphores.
 */
interface Setup {
  connection: Record<string, unknown>;
  backend(table?: string): LockBackend;
  /** Admin: one statement on the admin connection. */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

const kinds: [string, () => Promise<Setup>][] = [
  [
    'mysql',
    async () => {
      const db = await mariaDbPools();
      const admin = db.pool();
      return {
        connection: db.connection,
        backend: (table) => new MySqlLockBackend({ client: db.pool(), table }),
        exec: async (sql) => void (await admin.query(sql)),
        close: () => db.close(),
      };
    },
  ],
  [
    'postgres',
    async () => {
      const db = await postgresPools();
      const admin = db.pool();
      return {
        connection: db.connection,
        backend: (table) => new PostgresLockBackend({ client: db.pool(), table }),
        exec: async (sql) => void (await admin.query(sql)),
        close: () => db.close(),
      };
    },
  ],
];

describe.each(kinds)('%s: native semaphores', (kind, setup) => {
  let s: Setup;
  let engines: LockEngine[] = [];
  const children = new Set<HolderProcess>();
  const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;
  const engine = (table?: string) => {
    const e = new LockEngine({
      backend: s.backend(table),
      keyPrefix: '',
      defaults: { ttl: 2_000 },
    });
    engines.push(e);
    return e;
  };

  beforeAll(async () => {
    s = await setup();
  }, 120_000);
  afterEach(async () => {
    await Promise.all([...children].map((child) => child.kill()));
    children.clear();
    await Promise.all(engines.map((e) => e.close()));
    engines = [];
  });
  afterAll(async () => s?.close());

  it('four processes, twelve workers, permits 3: never more than 3 inside, and all 3 permits used', async () => {
    const k = key('sem-procs');
    let inside = 0;
    let most = 0;
    let grants = 0;
    const tokens = new Set<string>();
    const run = async () => {
      const child = HolderProcess.start(join(__dirname, 'sql-semaphore.process.ts'), [
        kind,
        JSON.stringify(s.connection),
        k,
        '3',
        '3',
        '5',
        '15',
      ]);
      children.add(child);
      child.child.on('message', (m: HolderMessage) => {
        if (m.type === 'enter') {
          most = Math.max(most, ++inside);
          grants++;
          tokens.add(m.token as string);
        } else if (m.type === 'exit') inside--;
        else return;
        child.send({ type: 'ack', id: m.id });
      });
      await child.next('done', 0, 110_000);
    };
    await Promise.all([run(), run(), run(), run()]);
    expect(grants).toBe(4 * 3 * 5);
    expect(tokens.size).toBe(grants); // every grant its own fencing token
    expect(most).toBe(3);
  }, 120_000);

  it('inspect shows every permit (exclusive, with its owner) and the last token; forceRelease frees them all', async () => {
    const e = engine();
    const k = key('sem-inspect');
    const a = await e.acquire(k, { permits: 3 });
    const b = await e.acquire(k, { permits: 3 });
    const backend = e.backend();
    const seen = await backend.inspect!(k);
    expect(seen.held).toBe(true);
    expect(seen.mode).toBe('exclusive');
    expect(seen.holders).toHaveLength(2);
    expect(seen.holders.every((h) => h.mode === 'exclusive' && h.remainingTtl! > 0)).toBe(true);
    expect(seen.fencingToken).toBe(b.fencingToken);
    expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
    // A lock of the same key is independent of its semaphore (as in the memory backend).
    const lock = await e.acquire(k, { wait: 0 });
    await lock.release();
    expect(await backend.forceRelease!(k)).toBe(true);
    expect((await backend.inspect!(k)).held).toBe(false);
    const c = await e.acquire(k, { permits: 3 });
    expect(c.fencingToken).toBeGreaterThan(b.fencingToken);
    await Promise.all([a.release(), b.release(), c.release()]);
  });

  it('list(prefix, limit): held keys under the prefix (locks, shared, permits), in key order, at most limit', async () => {
    const e = engine();
    const p = key('list');
    const held = [
      await e.acquire(`${p}/a`),
      await e.acquire(`${p}/b`, { mode: 'shared' }),
      await e.acquire(`${p}/b`, { mode: 'shared' }),
      await e.acquire(`${p}/c`, { permits: 2 }),
      await e.acquire(`${p}/%_\u00e9\u{10ffff}`),
      await e.acquire(`${p}0`), // sorts right after the prefix's range ('/' + 1 = '0')
    ];
    const gone = await e.acquire(`${p}/released`);
    await gone.release();
    const backend = e.backend();
    expect(await backend.list!(`${p}/`, 100)).toEqual([
      `${p}/%_\u00e9\u{10ffff}`,
      `${p}/a`,
      `${p}/b`,
      `${p}/c`,
    ]);
    expect(await backend.list!(`${p}/`, 2)).toEqual([`${p}/%_\u00e9\u{10ffff}`, `${p}/a`]);
    expect(await backend.list!(`${p}/%_`, 100)).toEqual([`${p}/%_\u00e9\u{10ffff}`]);
    expect(await backend.list!(`${p}/%_\u00e9\u{10ffff}`, 100)).toEqual([
      `${p}/%_\u00e9\u{10ffff}`,
    ]);
    expect(await backend.list!(`${p}/x`, 100)).toEqual([]);
    expect(await backend.list!(p, 0)).toEqual([]);
    expect((await backend.list!('', 10_000)).filter((k) => k.startsWith(p))).toHaveLength(5);
    await Promise.all(held.map((h) => h.release()));
    expect(await backend.list!(p, 100)).toEqual([]);
  });

  if (kind === 'postgres') {
    it('a table created before semaphores (CHECK of exclusive and shared only) is upgraded at start-up', async () => {
      const table = `old_${randomBytes(3).toString('hex')}`;
      await s.exec(`CREATE TABLE "${table}" (
        lock_key text NOT NULL, owner text NOT NULL,
        mode text NOT NULL CHECK (mode IN ('exclusive', 'shared')),
        expires_at timestamptz NOT NULL, fence bigint NOT NULL, PRIMARY KEY (lock_key, owner))`);
      await s.exec(`CREATE SEQUENCE "${table}_fence" AS bigint`);
      const e = engine(table);
      const k = key('upgraded');
      const a = await e.acquire(k, { permits: 2 });
      const b = await e.acquire(k, { permits: 2 });
      expect(await e.tryAcquire(k, { permits: 2 })).toBeNull();
      await Promise.all([a.release(), b.release()]);
    });
  }
});
