import type { BackendName } from './torture.backends';

/**
 * The package's own fenced writes, as the torture store's arbiter: every counter `read` and
 * `write` of a writer is decided by the store a user of that backend would fence with, on a
 * private server of its own (the nemesis targets the lock service, not the resource), and an
 * admitted reader's token `advance`s the same fence (so an older writer is refused by it):
 * - redis, redlock: RedisFencedStore (a read is a fenced user script: GET only if current; a
 *   write a fenced SET), on a private redis-server;
 * - postgres, mysql: PostgresFencedStore / MySqlFencedStore, the column form (a read is a fenced
 *   UPDATE of the row's fence then a SELECT of its value, a write a fenced UPDATE of the value),
 *   on a private PostgreSQL / MariaDB;
 * - etcd, zookeeper, memory: MemoryFenceStore, in the harness's process (etcd and ZooKeeper are
 *   not data stores, so their users keep the resource elsewhere; their tokens, revisions and
 *   zxids, are bigints the fence compares exactly; the memory backend is in-process by design).
 * The FencedStore serialises each key's accesses, so a read's UPDATE and SELECT never interleave
 * with another access to that key, and its record order is the fence's decision order.
 */
export interface TortureFence {
  readonly name: string;
  read(key: string, token: bigint): Promise<{ accepted: boolean; value: number }>;
  write(key: string, token: bigint, value: number): Promise<{ accepted: boolean }>;
  /** Records an admitted reader's token on the key's fence (refused: a newer one is there). */
  advance(key: string, token: bigint): Promise<{ accepted: boolean }>;
  close(): Promise<void>;
}

async function redisFence(): Promise<TortureFence> {
  const { default: Redis } = await import('ioredis');
  const { RedisServer } = await import('../support/redis-server');
  const { RedisFencedStore } = await import('../../lib/fencing');
  const server = await RedisServer.start();
  const client = new Redis({ host: '127.0.0.1', port: server.port });
  const store = new RedisFencedStore({ client });
  const get = store.script("return redis.call('GET', KEYS[1])");
  const keyOf = (key: string) => `torture:${key}`;
  return {
    name: 'RedisFencedStore',
    async read(key, token) {
      const r = await store.run<string | null>(get, token, [keyOf(key)]);
      return { accepted: r.accepted, value: r.accepted ? Number(r.value ?? 0) : 0 };
    },
    async write(key, token, value) {
      return { accepted: (await store.set(keyOf(key), token, value)).accepted };
    },
    async advance(key, token) {
      return { accepted: (await store.advance(keyOf(key), token)).accepted };
    },
    async close() {
      client.disconnect();
      await server.destroy();
    },
  };
}

async function sqlFence(kind: 'postgres' | 'mysql'): Promise<TortureFence> {
  const TABLE = 'torture_counters';
  let store: import('../../lib/fencing').SqlFencedStore<any>;
  let query: (sql: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;
  let close: () => Promise<void>;
  if (kind === 'postgres') {
    const { Pool } = await import('pg');
    const { PostgresServer } = await import('../support/postgres-server');
    const { PostgresFencedStore } = await import('../../lib/fencing');
    const server = await PostgresServer.start();
    const pool = new Pool({ ...server.connection, max: 4 });
    store = new PostgresFencedStore({ client: pool });
    query = async (sql, values) => (await pool.query(sql, values)).rows;
    close = async () => (await pool.end(), await server.destroy());
  } else {
    const { createPool } = await import('mysql2/promise');
    const { MariaDbServer } = await import('../support/mariadb-server');
    const { MySqlFencedStore } = await import('../../lib/fencing');
    const server = await MariaDbServer.start();
    const pool = createPool({ ...server.connection, connectionLimit: 4 });
    store = new MySqlFencedStore({ client: pool });
    query = async (sql, values) => (await pool.query(sql, values))[0] as Record<string, unknown>[];
    close = async () => (await pool.end(), await server.destroy());
  }
  await query(`CREATE TABLE ${TABLE} (name VARCHAR(64) PRIMARY KEY, value INT NOT NULL)`);
  await query(store.columnDdl(TABLE));
  const known = new Set<string>();
  const row = async (key: string) => {
    if (known.has(key)) return;
    const insert =
      kind === 'postgres'
        ? `INSERT INTO ${TABLE} (name, value) VALUES ($1, 0) ON CONFLICT DO NOTHING`
        : `INSERT IGNORE INTO ${TABLE} (name, value) VALUES (?, 0)`;
    await query(insert, [key]);
    known.add(key);
  };
  const select =
    kind === 'postgres'
      ? `SELECT value FROM ${TABLE} WHERE name = $1`
      : `SELECT value FROM ${TABLE} WHERE name = ?`;
  // The row's own fence column, raised to `token` unless a newer holder was here.
  const raise = async (key: string, token: bigint) => {
    await row(key);
    return store.update({ table: TABLE, set: { name: key }, where: { name: key } }, token);
  };
  return {
    name: kind === 'postgres' ? 'PostgresFencedStore' : 'MySqlFencedStore',
    async read(key, token) {
      const r = await raise(key, token);
      if (!r.accepted) return { accepted: false, value: 0 };
      return { accepted: true, value: Number((await query(select, [key]))[0]?.value ?? 0) };
    },
    async write(key, token, value) {
      await row(key);
      const r = await store.update({ table: TABLE, set: { value }, where: { name: key } }, token);
      return { accepted: r.accepted };
    },
    async advance(key, token) {
      return { accepted: (await raise(key, token)).accepted };
    },
    close,
  };
}

async function memoryFence(): Promise<TortureFence> {
  const { MemoryFenceStore } = await import('../../lib/fencing');
  const store = new MemoryFenceStore();
  const values = new Map<string, number>();
  return {
    name: 'MemoryFenceStore',
    async read(key, token) {
      const r = store.write(key, token, () => values.get(key) ?? 0);
      return { accepted: r.accepted, value: r.accepted ? r.value : 0 };
    },
    async write(key, token, value) {
      return { accepted: store.write(key, token, () => values.set(key, value)).accepted };
    },
    async advance(key, token) {
      return { accepted: (await store.advance(key, token)).accepted };
    },
    close: async () => undefined,
  };
}

/** Starts the fence the harness's store uses for `backend`'s runs. */
export function startTortureFence(backend: BackendName): Promise<TortureFence> {
  switch (backend) {
    case 'postgres':
    case 'mysql':
      return sqlFence(backend);
    case 'redis':
    case 'redlock':
      return redisFence();
    default:
      return memoryFence();
  }
}
