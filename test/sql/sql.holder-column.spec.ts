import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { eventually } from '../support/eventually';
import { mariaDbPools, postgresPools } from '../support/sql-pools';

/**
 * The holder column of the SQL lock table: a table made before it gets it at start-up
 * (createTable: true) and the grants store their holder there; a table a DBA manages
 * (createTable: false) without it keeps working, without identities, until the column is added.
 * Likewise waiters' tickets: PostgreSQL's older mode check refuses them, so a DBA's older table is
 * served without the fair line, and createTable: true replaces the check.
 */
interface Setup {
  backend(table: string, createTable: boolean): LockBackend;
  /** The lock table as it was before the holder column. */
  oldTable(table: string): Promise<void>;
  addColumn(table: string): Promise<void>;
  /** The older table refuses waiters' tickets (PostgreSQL's mode check). */
  refusesTickets: boolean;
  tickets(table: string, key: string): Promise<number>;
  close(): Promise<void>;
}

const kinds: [string, () => Promise<Setup>][] = [
  [
    'mysql',
    async () => {
      const db = await mariaDbPools();
      const admin = db.pool();
      return {
        backend: (table, createTable) =>
          new MySqlLockBackend({ client: db.pool(), table, createTable }),
        oldTable: async (t) => {
          await admin.query(`CREATE TABLE \`${t}\` (
            lock_key VARBINARY(2048) NOT NULL, owner CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
            mode VARCHAR(9) CHARACTER SET ascii NOT NULL, expires_at DATETIME(3) NOT NULL,
            fence BIGINT UNSIGNED NOT NULL, PRIMARY KEY (lock_key, owner)) ENGINE=InnoDB`);
          await admin.query(
            `CREATE TABLE \`${t}_keys\` (lock_key VARBINARY(2048) NOT NULL PRIMARY KEY) ENGINE=InnoDB`,
          );
          await admin.query(`CREATE TABLE \`${t}_fence\` (id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
            value BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`);
          await admin.query(`INSERT INTO \`${t}_fence\` (id, value) VALUES (1, 0)`);
        },
        addColumn: async (t) =>
          void (await admin.query(`ALTER TABLE \`${t}\` ADD COLUMN holder VARCHAR(256) NULL`)),
        refusesTickets: false,
        tickets: async (t, k) => {
          const [rows] = await admin.query(
            `SELECT COUNT(*) AS n FROM \`${t}\` WHERE lock_key = ? AND mode = 'queued'`,
            [k],
          );
          return Number((rows as { n: number }[])[0].n);
        },
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
        backend: (table, createTable) =>
          new PostgresLockBackend({ client: db.pool(), table, createTable }),
        oldTable: async (t) => {
          await admin.query(`CREATE TABLE "${t}" (
            lock_key text NOT NULL, owner text NOT NULL,
            mode text NOT NULL CHECK (mode IN ('exclusive', 'shared', 'semaphore')),
            expires_at timestamptz NOT NULL, fence bigint NOT NULL, PRIMARY KEY (lock_key, owner))`);
          await admin.query(`CREATE SEQUENCE "${t}_fence" AS bigint`);
        },
        addColumn: async (t) =>
          void (await admin.query(`ALTER TABLE "${t}" ADD COLUMN holder text`)),
        refusesTickets: true,
        tickets: async (t, k) =>
          Number(
            (
              await admin.query(
                `SELECT count(*) AS n FROM "${t}" WHERE lock_key = $1 AND mode = 'queued'`,
                [k],
              )
            ).rows[0].n,
          ),
        close: () => db.close(),
      };
    },
  ],
];

const me = {
  host: hostname().slice(0, 64),
  pid: String(process.pid),
  instance: 'orders-api',
};

describe.each(kinds)('%s: the holder column', (_kind, setup) => {
  let s: Setup;
  const engines: LockEngine[] = [];
  const engine = (backend: LockBackend) => {
    const e = new LockEngine({ backend, instance: 'orders-api' });
    engines.push(e);
    return e;
  };

  beforeAll(async () => {
    s = await setup();
  }, 60_000);

  afterAll(async () => {
    for (const e of engines) await e.close();
    await s?.close();
  });

  it('an older table gets the column at start-up (createTable), and grants store their holder', async () => {
    const table = `old_${randomBytes(3).toString('hex')}`;
    await s.oldTable(table);
    const backend = s.backend(table, true);
    const held = await engine(backend).acquire('upgraded');
    const seen = await backend.inspect!('lock:upgraded');
    expect(seen.holders).toEqual([expect.objectContaining({ metadata: me })]);
    await held.release();
  });

  it("a DBA's table without it (createTable: false) works without identities until it is added", async () => {
    const table = `dba_${randomBytes(3).toString('hex')}`;
    await s.oldTable(table);
    const before = s.backend(table, false);
    const held = await engine(before).acquire('managed');
    const seen = await before.inspect!('lock:managed');
    expect(seen.held).toBe(true);
    expect(seen.holders[0].metadata).toBeUndefined();
    await held.release();
    await s.addColumn(table);
    // The column is read once per backend (with the schema): a backend made after the ALTER uses it.
    const after = s.backend(table, false);
    const again = await engine(after).acquire('managed');
    expect((await after.inspect!('lock:managed')).holders[0].metadata).toEqual(me);
    await again.release();
  });

  it.each([false, true])(
    'an older table with createTable: %s serves a waiter, with a ticket unless its mode check refuses them',
    async (createTable) => {
      const table = `tk_${randomBytes(3).toString('hex')}`;
      await s.oldTable(table);
      const held = await engine(s.backend(table, createTable)).acquire('t', { ttl: 30_000 });
      const backend = s.backend(table, createTable);
      let answered = 0;
      const attempt = backend.tryAcquire.bind(backend);
      backend.tryAcquire = (request) => attempt(request).finally(() => void answered++);
      const waiting = engine(backend).acquire('t', { wait: 30_000 });
      await eventually(() => answered > 0); // its first attempt found the key busy
      const ticket = createTable || !s.refusesTickets ? 1 : 0;
      expect(await s.tickets(table, 'lock:t')).toBe(ticket);
      await held.release();
      await (await waiting).release();
    },
  );
});
