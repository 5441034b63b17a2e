import Redis from 'ioredis';
import { createPool, type Pool as MySqlPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';
import { RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';

/**
 * close() while acquires are in flight: each caller is rejected, and a grant the server answers
 * after close() stopped waiting for it must be given back before close() shuts the backend's own
 * client; otherwise the give-back runs against a closed client and the lock stays on the server
 * for its whole ttl. A second backend over a client of the test's own then finds none held.
 * On SQL the test holds the lock table (a table lock of its own) so that every acquire is blocked
 * in the server when close() starts, and lets go once every caller has been rejected.
 */
const KEYS = 40;
const TTL = 60_000;

interface Kind {
  /** A backend that owns its client (close() ends it). */
  owned(): LockBackend;
  /** A backend over a client the test owns, to look at the server after close(). */
  observer(): LockBackend;
  /** Blocks the lock table in the server; resolves a function that lets go of it. */
  stall?(): Promise<() => Promise<void>>;
  /** How many statements wait on that table lock now. */
  stalled?(): Promise<number>;
}

async function closeWithAcquiresInFlight(kind: Kind, prefix: string): Promise<void> {
  const engine = new LockEngine({
    backend: kind.owned(),
    keyPrefix: prefix,
    operationTimeout: 2_000,
    defaults: { ttl: TTL, wait: 0 },
  });
  // One grant first: the backend is connected (and its table made), so the acquires below are
  // in flight on the wire when close() starts.
  await (await engine.acquire('warm-up')).release();
  const keys = Array.from({ length: KEYS }, (_, i) => `in-flight-${i}`);
  const letGo = await kind.stall?.();
  const outcomes = keys.map((k) =>
    engine.acquire(k).then(
      () => 'granted',
      () => 'rejected',
    ),
  );
  if (kind.stalled) await eventually(async () => (await kind.stalled!()) >= KEYS);
  const closed = engine.close();
  expect(await Promise.all(outcomes)).toEqual(keys.map(() => 'rejected'));
  await letGo?.();
  await closed;
  const observer = new LockEngine({ backend: kind.observer(), keyPrefix: prefix });
  try {
    const held = await Promise.all(keys.map((k) => observer.operator.inspect(k)));
    expect(held.filter((i) => i.held).map((i) => i.key)).toEqual([]);
  } finally {
    await observer.close();
  }
}

describe('close() with acquires in flight leaves no grant on the server', () => {
  let redis: RedisServer | undefined;
  let postgres: PostgresServer | undefined;
  let mariadb: MariaDbServer | undefined;
  const clients: { end(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    [redis, postgres, mariadb] = await Promise.all([
      RedisServer.start(),
      PostgresServer.start(),
      MariaDbServer.start(),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await Promise.all([redis?.destroy(), postgres?.destroy(), mariadb?.destroy()]);
  });

  it('Redis: every late grant is given back before the owned client quits', async () => {
    const port = (redis as RedisServer).port;
    const client = () => new Redis({ port, host: '127.0.0.1', lazyConnect: false });
    const mine = client();
    clients.push({ end: () => mine.quit() });
    await closeWithAcquiresInFlight(
      {
        owned: () => new RedisLockBackend({ clientFactory: client }),
        observer: () => new RedisLockBackend({ client: mine }),
      },
      'close-flight:',
    );
  }, 30_000);

  it('PostgreSQL: every late grant is given back before the owned pool ends', async () => {
    const server = postgres as PostgresServer;
    const pool = () => {
      const p = new Pool({ ...server.connection, max: 50 });
      p.on('error', () => undefined);
      return p;
    };
    const mine = pool();
    clients.push(mine);
    await closeWithAcquiresInFlight(
      {
        owned: () => new PostgresLockBackend({ clientFactory: pool }),
        observer: () => new PostgresLockBackend({ client: mine }),
        stall: async () => {
          const c = await mine.connect();
          await c.query('BEGIN');
          await c.query('LOCK TABLE distributed_locks IN ACCESS EXCLUSIVE MODE');
          return async () => {
            await c.query('COMMIT');
            c.release();
          };
        },
        stalled: async () => {
          const { rows } = await mine.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
          );
          return (rows[0] as { n: number }).n;
        },
      },
      'close-flight:',
    );
  }, 30_000);

  it('MySQL: every late grant is given back before the owned pool ends', async () => {
    const server = mariadb as MariaDbServer;
    const pool = (): MySqlPool => createPool({ ...server.connection, connectionLimit: 50 });
    const mine = pool();
    clients.push(mine);
    await closeWithAcquiresInFlight(
      {
        owned: () => new MySqlLockBackend({ clientFactory: pool }),
        observer: () => new MySqlLockBackend({ client: mine }),
        stall: async () => {
          const c = await mine.getConnection();
          await c.query('LOCK TABLES distributed_locks WRITE');
          return async () => {
            await c.query('UNLOCK TABLES');
            c.release();
          };
        },
        stalled: async () => {
          const [rows] = await mine.query(
            "SELECT count(*) AS n FROM information_schema.processlist WHERE state LIKE 'Waiting for table%'",
          );
          return Number((rows as { n: number }[])[0].n);
        },
      },
      'close-flight:',
    );
  }, 30_000);
});
