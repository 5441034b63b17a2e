import { createPool, type Pool as MySqlPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';

/**
 * Issue 12.3: besides `{ client }` (the user owns the pool), a SQL backend accepts
 * `{ clientFactory }`: it makes the pool on first use and ends it in close(), so an application
 * needs no shutdown hook of its own.
 */
interface Kind<P> {
  name: string;
  start(): Promise<{ connection: object; destroy(): Promise<void> }>;
  pool(connection: object): P;
  ended(pool: P): boolean;
  end(pool: P): Promise<void>;
  backend(options: object): LockBackend;
}

const mysql: Kind<MySqlPool> = {
  name: 'mysql (MariaDB 10.11)',
  start: () => MariaDbServer.start(),
  pool: (c) => createPool({ ...c, connectionLimit: 4 }),
  ended: (p) => (p.pool as unknown as { _closed: boolean })._closed,
  end: (p) => p.end(),
  backend: (o) => new MySqlLockBackend(o as never),
};
const postgres: Kind<Pool> = {
  name: 'postgres 15',
  start: () => PostgresServer.start(),
  pool: (c) => new Pool({ ...c, max: 4 }),
  ended: (p) => p.ended,
  end: (p) => p.end(),
  backend: (o) => new PostgresLockBackend(o as never),
};

describe.each([mysql, postgres] as Kind<unknown>[])('$name: clientFactory', (kind) => {
  let server: { connection: object; destroy(): Promise<void> };
  const made: unknown[] = [];
  const factory = () => {
    const pool = kind.pool(server.connection);
    made.push(pool);
    return pool;
  };

  beforeAll(async () => {
    server = await kind.start();
  });
  afterAll(async () => {
    await Promise.all(made.filter((p) => !kind.ended(p)).map((p) => kind.end(p)));
    await server?.destroy();
  });
  afterEach(() => void (made.length = 0));

  it('makes the pool once, on first use, locks through it across processes, and ends it on close', async () => {
    const a = new LockEngine({ backend: kind.backend({ clientFactory: factory }), keyPrefix: '' });
    const b = new LockEngine({
      backend: kind.backend({ clientFactory: async () => factory() }),
      keyPrefix: '',
    });
    expect(made).toHaveLength(0); // nothing is connected before it is needed
    const h = await a.acquire('factory:1', { ttl: 5_000 });
    expect(await b.tryAcquire('factory:1')).toBeNull();
    const waiting = b.acquire('factory:1', { wait: 10_000 });
    await h.release();
    await (await waiting).release();
    expect(made).toHaveLength(2);
    await Promise.all([a.close(), b.close()]);
    expect(made.every((p) => kind.ended(p))).toBe(true);
  });

  it('never ends a pool the user passed as client, and a factory never used is never called', async () => {
    const mine = kind.pool(server.connection);
    const e = new LockEngine({ backend: kind.backend({ client: mine }), keyPrefix: '' });
    await (await e.acquire('factory:2')).release();
    await e.close();
    expect(kind.ended(mine)).toBe(false);
    await kind.end(mine);
    const unused = kind.backend({ clientFactory: factory });
    await unused.close();
    expect(made).toHaveLength(0);
  });

  it('a factory that throws fails the acquire as unavailable and is called again on the next one', async () => {
    let calls = 0;
    const flaky = () => {
      if (++calls === 1) throw new Error('config not loaded yet');
      return factory();
    };
    const e = new LockEngine({ backend: kind.backend({ clientFactory: flaky }), keyPrefix: '' });
    await expect(e.acquire('factory:3', { wait: 0 })).rejects.toMatchObject({
      name: 'LockBackendUnavailableError',
    });
    await (await e.acquire('factory:3', { wait: 0 })).release();
    expect(calls).toBe(2);
    await e.close();
    expect(made.every((p) => kind.ended(p))).toBe(true);
  });

  it('rejects client together with clientFactory, and a clientFactory that is not a function', () => {
    const pool = kind.pool(server.connection);
    expect(() => kind.backend({ client: pool, clientFactory: factory })).toThrow(
      expect.objectContaining({ option: 'clientFactory' }),
    );
    expect(() => kind.backend({ clientFactory: pool })).toThrow(
      expect.objectContaining({ option: 'clientFactory' }),
    );
    expect(() => kind.backend({})).toThrow(expect.objectContaining({ option: 'client' }));
    return kind.end(pool);
  });
});
