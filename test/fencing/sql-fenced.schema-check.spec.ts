import { Pool } from 'pg';
import { InvalidLockOptionsError } from '../../lib';
import { PostgresFencedStore } from '../../lib/fencing';
import { PostgresServer } from '../support/postgres-server';

/**
 * checkSchema() at start-up, before createTable() ever ran: the message says that the store's fence
 * table does not exist and what to run, and names no option the caller never passed.
 */
let server: PostgresServer;
let pool: Pool;

beforeAll(async () => {
  server = await PostgresServer.start();
  pool = new Pool({ ...server.connection, max: 2 });
  pool.on('error', () => undefined);
  await pool.query(
    'CREATE TABLE accounts (id int PRIMARY KEY, balance int, fence bigint, fence_grant varchar(64))',
  );
});

afterAll(async () => {
  await pool.end();
  await server.destroy();
});

describe('checkSchema() with the fence table missing', () => {
  it('says the fence table does not exist and gives its DDL, without "Invalid lock option"', async () => {
    const store = new PostgresFencedStore({ client: pool });
    const error = await store.checkSchema([{ table: 'accounts' }]).then(
      () => undefined,
      (e: unknown) => e as InvalidLockOptionsError,
    );
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    expect(error?.message).toContain(`fence table (option table, default lock_fences)`);
    expect(error?.message).toContain('"lock_fences" does not exist');
    expect(error?.message).toContain(store.ddl);
    expect(error?.message).not.toContain('Invalid lock option');
  });

  it('passes once createTable() made it', async () => {
    const store = new PostgresFencedStore({ client: pool });
    await store.createTable();
    await expect(store.checkSchema([{ table: 'accounts' }])).resolves.toBeUndefined();
  });
});
