import { createPool, type Pool as MySqlPool } from 'mysql2/promise';
import { join } from 'node:path';
import { Pool } from 'pg';
import { LockEngine, MySqlLockBackend, PostgresLockBackend, type LockBackend } from '../../lib';
import {
  fenceColumnDdl,
  fenceTableDdl,
  MySqlFencedStore,
  PostgresFencedStore,
  StaleFencingTokenError,
  type SqlFencedStore,
} from '../../lib/fencing';
import { HolderProcess } from '../support/holder-harness';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';

const HOLDER = join(__dirname, 'fenced-holder.process.ts');

/** One dialect's fixture: the server, a pool, the store over it, the lock backend, raw SQL. */
interface SqlFixture {
  kind: 'postgres' | 'mysql';
  connection: Record<string, unknown>;
  store: SqlFencedStore<any>;
  backend: LockBackend;
  query(sql: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

async function postgres(): Promise<SqlFixture> {
  const server = await PostgresServer.start();
  const pool = new Pool({ ...server.connection, max: 4 });
  pool.on('error', () => undefined);
  return {
    kind: 'postgres',
    connection: server.connection,
    store: new PostgresFencedStore({ client: pool }),
    backend: new PostgresLockBackend({ client: pool }),
    query: async (sql) => (await pool.query(sql)).rows,
    close: async () => (await pool.end(), await server.destroy()),
  };
}

async function mysql(): Promise<SqlFixture> {
  const server = await MariaDbServer.start();
  const pool: MySqlPool = createPool({ ...server.connection, connectionLimit: 4 });
  return {
    kind: 'mysql',
    connection: server.connection,
    store: new MySqlFencedStore({ client: pool }),
    backend: new MySqlLockBackend({ client: pool }),
    query: async (sql) => (await pool.query(sql))[0] as Record<string, unknown>[],
    close: async () => (await pool.end(), await server.destroy()),
  };
}

describe.each([
  ['PostgreSQL', postgres],
  ['MariaDB (MySQL)', mysql],
])('fenced SQL writes on %s', (_name, start) => {
  let f: SqlFixture;
  const holders: HolderProcess[] = [];
  const owner = async (id: number) =>
    String((await f.query(`SELECT owner FROM accounts WHERE id = ${id}`))[0]?.owner);

  beforeAll(async () => {
    f = await start();
    await f.query('CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(40), balance INT)');
    await f.query(fenceColumnDdl(f.kind, 'accounts'));
    await f.query(
      "INSERT INTO accounts (id, owner, balance) VALUES (1, 'nobody', 0), (2, 'nobody', 0), (3, 'nobody', 0), (4, 'nobody', 0)",
    );
    await f.store.createTable();
  }, 120_000);
  afterAll(async () => {
    await Promise.all(holders.map((h) => h.kill()));
    await f?.close();
  });

  it('the documented DDL is what runs, and the tables it makes have the types the store relies on', async () => {
    expect(f.store.ddl).toBe(fenceTableDdl(f.kind));
    expect(f.store.columnDdl('accounts')).toBe(fenceColumnDdl(f.kind, 'accounts'));
    const types = await f.query(
      'SELECT table_name AS t, column_name AS c, data_type AS d FROM information_schema.columns ' +
        "WHERE table_name IN ('lock_fences', 'accounts') AND column_name IN ('resource', 'token', 'grant_id', 'fence', 'fence_grant') " +
        'ORDER BY 1, 2',
    );
    expect(
      types.map((r) => `${r.t ?? r.T}.${r.c ?? r.C}:${String(r.d ?? r.D).toLowerCase()}`),
    ).toEqual([
      'accounts.fence:bigint',
      expect.stringMatching(/^accounts\.fence_grant:(character varying|varbinary)$/),
      expect.stringMatching(/^lock_fences\.grant_id:(character varying|varbinary)$/),
      expect.stringMatching(/^lock_fences\.resource:(character varying|varbinary)$/),
      'lock_fences.token:bigint',
    ]);
  });

  it('checkSchema() accepts the documented DDL and names what is missing otherwise', async () => {
    await f.store.checkSchema([{ table: 'accounts' }]);
    await expect(f.store.checkSchema([{ table: 'accounts', column: 'balance' }])).rejects.toThrow(
      /has column balance of type (integer|int)\b.*, not BIGINT.*; run: ALTER TABLE/,
    );
    await expect(f.store.checkSchema([{ table: 'nowhere' }])).rejects.toThrow(
      /"nowhere" does not exist/,
    );
  });

  it('column form: one UPDATE writes with a current token and refuses an older one', async () => {
    const spec = { table: 'accounts', set: { owner: 'w7', balance: 7 }, where: { id: 1 } };
    expect(await f.store.update(spec, 7n)).toMatchObject({ accepted: true, value: 1 });
    expect(await f.store.update(spec, 7n)).toMatchObject({ accepted: true, value: 1 });
    const stale = await f.store.update({ ...spec, set: { owner: 'w6' } }, 6n);
    expect(stale).toMatchObject({ accepted: false, token: 6n, highest: 7n });
    expect(!stale.accepted && stale.error).toBeInstanceOf(StaleFencingTokenError);
    expect(await owner(1)).toBe('w7');
    // No matching row: accepted with 0 rows, as the plain UPDATE would be.
    expect(await f.store.update({ ...spec, where: { id: 99 } }, 1n)).toMatchObject({
      accepted: true,
      value: 0,
    });
    // Past 2^53 the compare is exact (BIGINT, never a double).
    const big = 2n ** 60n;
    expect((await f.store.update(spec, big + 1n)).accepted).toBe(true);
    expect(await f.store.update(spec, big)).toMatchObject({ accepted: false, highest: big + 1n });
  });

  it('table form: the fence row and your writes commit together, or neither does', async () => {
    const write = (token: bigint, who: string) =>
      f.store.transaction('acct:2', token, async (tx) => {
        await f.store.update(
          { table: 'accounts', set: { owner: who }, where: { id: 2 } },
          token,
          tx,
        );
        return who;
      });
    expect(await write(10n, 'ten')).toMatchObject({ accepted: true, value: 'ten' });
    expect(await write(9n, 'nine')).toMatchObject({ accepted: false, highest: 10n });
    expect(await owner(2)).toBe('ten');
    await expect(
      f.store.transaction('acct:2', 11n, async () => {
        throw new Error('work failed');
      }),
    ).rejects.toThrow('work failed');
    // The rolled-back transaction did not move the fence: 10 is still current.
    expect(await f.store.highest('acct:2')).toBe(10n);
    expect((await f.store.advance('acct:2', 10n)).accepted).toBe(true);
  });

  it('tokens of two resources never interfere', async () => {
    expect((await f.store.advance('res:a', 500n)).accepted).toBe(true);
    expect((await f.store.advance('res:b', 3n)).accepted).toBe(true);
    expect((await f.store.advance('res:b', 4n)).accepted).toBe(true);
    expect((await f.store.advance('res:a', 499n)).accepted).toBe(false);
    expect([await f.store.highest('res:a'), await f.store.highest('res:b')]).toEqual([500n, 4n]);
  });

  it('a holder paused past its ttl (SIGSTOP) resumes and both its writes are refused', async () => {
    const key = 'sql-paused';
    const config = JSON.stringify({ connection: f.connection, resource: 'acct:paused' });
    const holder = HolderProcess.start(HOLDER, [f.kind, config, key, '1000']);
    holders.push(holder);
    const held = await holder.next('held', 0, 90_000);
    expect(held).toMatchObject({ accepted: true, tableAccepted: true });
    holder.stop();
    const engine = new LockEngine({ backend: f.backend, keyPrefix: 'fenced-test:' });
    try {
      const next = await engine.acquire(key, { ttl: 10_000, wait: 30_000 });
      expect(next.fencingToken).toBeGreaterThan(BigInt(held.token as string));
      const spec = { table: 'accounts', set: { owner: 'next' }, where: { id: 3 } };
      expect((await f.store.update(spec, next)).accepted).toBe(true);
      expect((await f.store.advance('acct:paused', next)).accepted).toBe(true);
      holder.cont();
      holder.send({ type: 'write' });
      const wrote = await holder.next('wrote');
      const highest = next.fencingToken.toString();
      expect(wrote).toMatchObject({
        accepted: false,
        highest,
        tableAccepted: false,
        tableHighest: highest,
      });
      expect([await owner(3), await owner(4)]).toEqual(['next', 'holder-tx']);
      await next.release();
    } finally {
      await engine.close();
    }
  }, 150_000);
});
