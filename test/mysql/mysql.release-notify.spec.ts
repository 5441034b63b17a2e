import { createPool, type Pool } from 'mysql2/promise';
import { MySqlLockBackend, type MySqlPoolLike } from '../../lib/backends/mysql';
import { LockEngine } from '../../lib/core/lock-engine';
import { MariaDbServer } from '../support/mariadb-server';
import { eventually } from '../support/eventually';
import type { LoggedStatement } from '../sql/sql-backend.cases';

/** Counts what a backend sends, over a real mysql2 pool. */
function logged(pool: Pool, log: LoggedStatement[]): MySqlPoolLike {
  return {
    pool: pool.pool,
    getConnection: async () => {
      const conn = await pool.getConnection();
      return {
        query: (sql, values) => (log.push({ sql, values }), conn.query(sql, values)),
        execute: (sql, values) => (log.push({ sql, values }), conn.execute(sql, values)),
        release: () => conn.release(),
        destroy: () => conn.destroy(),
      };
    },
  };
}

/**
 * Issue 19.2: a waiter in another process learns of a release from the key's GET_LOCK notify lock,
 * not by polling: it blocks in the server until the holder lets go, then attempts once more.
 */
describe('mysql (MariaDB 10.11): release notify (GET_LOCK)', () => {
  let server: MariaDbServer;
  const pools: Pool[] = [];
  const engines: LockEngine[] = [];
  const pool = (size: number) => {
    const p = createPool({ ...server.connection, connectionLimit: size });
    pools.push(p);
    return p;
  };
  const engine = (options: { poolSize?: number; blockingWaiters?: number } = {}) => {
    const log: LoggedStatement[] = [];
    const backend = new MySqlLockBackend({
      client: logged(pool(options.poolSize ?? 4), log),
      blockingWaiters: options.blockingWaiters,
    });
    const e = new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 60_000, wait: 30_000 } });
    engines.push(e);
    return { engine: e, log };
  };
  const attempts = (log: LoggedStatement[]) =>
    log.filter((s) => s.sql === 'START TRANSACTION').length;
  const blockedOnNotify = async () => {
    const [rows] = await pools[0].query(
      "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE info LIKE 'SELECT IS_USED_LOCK%'",
    );
    return Number((rows as { n: number }[])[0].n);
  };

  beforeAll(async () => {
    server = await MariaDbServer.start();
    pool(2); // admin
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await server?.destroy();
  });

  it('a waiter of another backend blocks in the server and is granted right after the release, without polling', async () => {
    const a = engine();
    const b = engine();
    const held = await a.engine.acquire('notify:1');
    const waiting = b.engine.acquire('notify:1');
    await eventually(async () => (await blockedOnNotify()) === 1); // the waiter sleeps in GET_LOCK
    const before = attempts(b.log);
    await held.release();
    const next = await waiting;
    // One attempt after the notify (a slow machine may add one fallback re-attempt, never a poll
    // series).
    expect(attempts(b.log) - before).toBeLessThanOrEqual(2);
    expect(next.fencingToken > held.fencingToken).toBe(true);
    await next.release();
  });

  it('8 waiters in 4 processes (more than blockingWaiters) are served one at a time', async () => {
    const es = Array.from({ length: 4 }, () => engine());
    const first = await es[0].engine.acquire('notify:2');
    let inside = 0;
    let most = 0;
    const work = es.flatMap((e) =>
      [0, 1].map(() =>
        e.engine.withLock('notify:2', async () => {
          most = Math.max(most, ++inside);
          await new Promise((r) => setImmediate(r));
          inside--;
        }),
      ),
    );
    await eventually(async () => (await blockedOnNotify()) >= 1);
    await first.release();
    await Promise.all(work);
    expect(most).toBe(1);
  });

  it('blockingWaiters: 0 polls only (no GET_LOCK statement is sent), and a pool of 2 gets no blocking waiters by default', async () => {
    for (const e of [engine({ blockingWaiters: 0 }), engine({ poolSize: 2 })]) {
      const other = engine();
      const held = await other.engine.acquire('notify:3', { ttl: 2_000 });
      const waiting = e.engine.acquire('notify:3');
      await eventually(() => attempts(e.log) >= 2);
      await held.release();
      await (await waiting).release();
      expect(e.log.some((s) => /GET_LOCK/.test(s.sql))).toBe(false);
    }
  });

  it('a holder whose holder connection dies leaves the lock held: waiters fall back to polling and get it after the release', async () => {
    const a = engine();
    const b = engine();
    const held = await a.engine.acquire('notify:4');
    // Kill the holder's holder-connection session (the one holding the notify lock) behind its
    // back.
    const holderConnId = async () => {
      const [ids] = await pools[0].query(
        "SELECT IS_USED_LOCK(CONCAT('ndl:', LEFT(SHA2(CONCAT('distributed_locks', CHAR(0), 'notify:4'), 256), 40))) AS id",
      );
      return Number((ids as { id: number | null }[])[0].id);
    };
    const id = await eventually(holderConnId); // armed right after the grant's COMMIT
    await pools[0].query(`KILL ${id}`);
    const waiting = b.engine.acquire('notify:4', { wait: 30_000 });
    await eventually(() => attempts(b.log) >= 3); // woken by nothing: it polls
    expect(held.held).toBe(true);
    await held.release();
    await (await waiting).release();
  });
});
