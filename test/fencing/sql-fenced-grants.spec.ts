import { createPool, type Pool as MySqlPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { InvalidLockOptionsError, LockBackendUnavailableError } from '../../lib';
import {
  fenceColumnDdl,
  MySqlFencedStore,
  PostgresFencedStore,
  type SqlFencedStore,
} from '../../lib/fencing';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';
import { stopped } from './stopped';

/** One dialect's fixture: the server, a store over a pool, raw SQL. */
interface SqlFixture {
  server: PostgresServer | MariaDbServer;
  store: SqlFencedStore<any>;
  bounded: SqlFencedStore<any>;
  query(sql: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

async function postgres(): Promise<SqlFixture> {
  const server = await PostgresServer.start();
  const pool = new Pool({ ...server.connection, max: 4 });
  pool.on('error', () => undefined);
  return {
    server,
    store: new PostgresFencedStore({ client: pool }),
    bounded: new PostgresFencedStore({ client: pool, timeout: 300 }),
    query: async (sql) => (await pool.query(sql)).rows,
    close: async () => (await pool.end(), await server.destroy()),
  };
}

async function mysql(): Promise<SqlFixture> {
  const server = await MariaDbServer.start();
  const pool: MySqlPool = createPool({ ...server.connection, connectionLimit: 4 });
  return {
    server,
    store: new MySqlFencedStore({ client: pool }),
    bounded: new MySqlFencedStore({ client: pool, timeout: 300 }),
    query: async (sql) => (await pool.query(sql))[0] as Record<string, unknown>[],
    close: async () => (await pool.end(), await server.destroy()),
  };
}

/** Two grants that got one token (what a lossy failover does), as the store reads a handle. */
const grant = (owner: string, fencingToken: bigint) =>
  ({ key: 'k', fencingToken, owner }) as unknown as bigint;

describe.each([
  ['postgres', postgres],
  ['mysql', mysql],
] as const)('fenced SQL writes on %s: grants, rows, names and faults', (kind, start) => {
  let f: SqlFixture;
  const owners = async () =>
    (await f.query('SELECT id, owner FROM wallets ORDER BY id')).map((r) => String(r.owner));

  beforeAll(async () => {
    f = await start();
    await f.query('CREATE TABLE wallets (id INT PRIMARY KEY, grp INT, owner VARCHAR(40))');
    await f.query(fenceColumnDdl(kind, 'wallets'));
    await f.query(
      "INSERT INTO wallets (id, grp, owner) VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c')",
    );
    await f.store.createTable();
  }, 120_000);
  afterAll(async () => f?.close());

  it('refuses an equal token from another grant (column and table forms); the holder writes on', async () => {
    const next = grant('new-holder', 50n);
    const old = grant('old-holder', 50n);
    const spec = { table: 'wallets', set: { owner: 'new' }, where: { id: 3 } };
    expect((await f.store.update(spec, next)).accepted).toBe(true);
    expect((await f.store.update(spec, next)).accepted).toBe(true);
    const late = await f.store.update({ ...spec, set: { owner: 'stale' } }, old);
    expect(late).toMatchObject({ accepted: false, token: 50n, highest: 50n });
    expect((await owners())[2]).toBe('new');
    expect((await f.store.advance('w:1', next)).accepted).toBe(true);
    expect((await f.store.advance('w:1', next)).accepted).toBe(true);
    expect(await f.store.advance('w:1', old)).toMatchObject({ accepted: false, highest: 50n });
    expect((await f.store.transaction('w:1', old, async () => 'ran')).accepted).toBe(false);
    expect((await f.store.advance('w:1', grant('third', 51n))).accepted).toBe(true);
    // A bare token 0 from another grant is refused too (MySQL's insert id stays non-zero).
    expect((await f.store.advance('w:0', grant('one', 0n))).accepted).toBe(true);
    expect((await f.store.advance('w:0', 0n)).accepted).toBe(false);
  });

  it('refuses a column-form update as a whole when any matched row is newer', async () => {
    const rows = { table: 'wallets', where: { grp: 1 } };
    expect(
      (await f.store.update({ ...rows, where: { id: 2 }, set: { owner: 'b9' } }, 9n)).accepted,
    ).toBe(true);
    const mixed = await f.store.update({ ...rows, set: { owner: 'stale' } }, 5n);
    expect(mixed).toMatchObject({ accepted: false, token: 5n, highest: 9n });
    expect((await owners()).slice(0, 2)).toEqual(['a', 'b9']);
    expect(await f.store.update({ ...rows, set: { owner: 'both' } }, 10n)).toMatchObject({
      accepted: true,
      value: 2,
    });
    expect((await owners()).slice(0, 2)).toEqual(['both', 'both']);
  });

  it('refuses where: { column: undefined } (or null), which would match nothing silently', async () => {
    for (const id of [undefined, null])
      await expect(
        f.store.update({ table: 'wallets', set: { owner: 'x' }, where: { id } }, 1n),
      ).rejects.toThrow(/where\.id/);
  });

  it('refuses tokens above 2^63-1 before sending anything', async () => {
    const spec = { table: 'wallets', set: { owner: 'wrapped' }, where: { id: 1 } };
    await expect(f.store.update(spec, 2n ** 63n)).rejects.toThrow(InvalidLockOptionsError);
    await expect(f.store.advance('w:big', 2n ** 64n - 1n)).rejects.toThrow(InvalidLockOptionsError);
    expect((await owners())[0]).not.toBe('wrapped');
    expect(await f.store.highest('w:big')).toBeUndefined();
  });

  it('resources differing only in case, accents or trailing spaces have their own fences', async () => {
    for (const [a, b] of [
      ['Invoice:7', 'invoice:7'],
      ['inv:8', 'inv:8 '],
      ['café:9', 'cafe:9'],
    ]) {
      expect((await f.store.advance(a, 100n)).accepted).toBe(true);
      expect((await f.store.advance(b, 1n)).accepted).toBe(true);
      expect([await f.store.highest(a), await f.store.highest(b)]).toEqual([100n, 1n]);
    }
  });

  it('checkSchema() accepts the documented DDL and names a missing grant column', async () => {
    await f.store.checkSchema([{ table: 'wallets' }]);
    await f.query('CREATE TABLE old_wallets (id INT PRIMARY KEY, fence BIGINT NULL)');
    await expect(f.store.checkSchema([{ table: 'old_wallets' }])).rejects.toThrow(
      /has no column fence_grant; run: ALTER TABLE .*old_wallets.* ADD COLUMN .*fence_grant/,
    );
  });

  if (kind === 'mysql')
    it('checkSchema() refuses a fence table that folds names or has an AUTO_INCREMENT column', async () => {
      await f.query(
        'CREATE TABLE folding (resource VARCHAR(255) COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, ' +
          "token BIGINT NOT NULL, grant_id VARBINARY(64) NOT NULL DEFAULT '')",
      );
      const folding = new MySqlFencedStore({ client: (f.store as any).client, table: 'folding' });
      await expect(folding.checkSchema()).rejects.toThrow(
        /has column resource of type varchar.*, not VARBINARY/,
      );
      await f.query(
        'CREATE TABLE counted (n BIGINT AUTO_INCREMENT UNIQUE, resource VARBINARY(1020) NOT NULL ' +
          "PRIMARY KEY, token BIGINT NOT NULL, grant_id VARBINARY(64) NOT NULL DEFAULT '')",
      );
      const counted = new MySqlFencedStore({ client: (f.store as any).client, table: 'counted' });
      await expect(counted.checkSchema()).rejects.toThrow(
        /without AUTO_INCREMENT columns \(found n/,
      );
    });

  it('reset() forgets a forged fence row', async () => {
    expect((await f.store.advance('account:victim', 2n ** 63n - 1n)).accepted).toBe(true);
    expect((await f.store.advance('account:victim', 3n)).accepted).toBe(false);
    expect(await f.store.reset('account:victim')).toBe(true);
    expect((await f.store.advance('account:victim', 3n)).accepted).toBe(true);
  });

  it('a paused server: a fenced statement fails with LockBackendUnavailableError at its timeout', async () => {
    f.server.pause();
    await stopped(f.server);
    try {
      await expect(f.bounded.advance('w:paused', 1n)).rejects.toThrow(LockBackendUnavailableError);
      await expect(f.bounded.transaction('w:paused', 1n, async () => 'ran')).rejects.toThrow(
        LockBackendUnavailableError,
      );
    } finally {
      f.server.resume();
    }
    expect((await f.bounded.advance('w:paused', 1n)).accepted).toBe(true);
    expect(await f.bounded.transaction('w:paused', 1n, async () => 'ran')).toMatchObject({
      accepted: true,
      value: 'ran',
    });
  }, 30_000);
});
