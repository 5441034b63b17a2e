/**
 * A lock holder in its own process, for the "paused past its ttl" tests: takes the lock, makes
 * one fenced write (reports `held` with its token and that write's outcome), then does nothing
 * until the test sends `write`: it then writes again with the same (by then stale) token, without
 * looking at its handle's signal (a careless holder: the fence alone must refuse it), and reports
 * `wrote`. Usage: fenced-holder.process.ts <redis|postgres|mysql|guard> <config JSON> <key> <ttl>.
 * - redis: RedisFencedStore.set(resource, token, 'holder');
 * - postgres / mysql: the column form (UPDATE accounts ... fence, row 3) and the table form
 *   (transaction() over the fence table, writing row 4), both reported;
 * - guard: an HTTP call to `config.url` with fencingHeaders(handle) (the caller side of @Fenced).
 * The lock is taken through a Nest application context (DistributedLockModule + LockService).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  DistributedLockModule,
  LockService,
  MySqlLockBackend,
  PostgresLockBackend,
  RedisLockBackend,
  type LockBackend,
  type LockHandle,
} from '../../lib';
import {
  fencingHeaders,
  MySqlFencedStore,
  PostgresFencedStore,
  RedisFencedStore,
  type PgQueryableLike,
  type SqlFencedStore,
} from '../../lib/fencing';
import { runHolder } from '../support/holder-harness';

type Kind = 'redis' | 'postgres' | 'mysql' | 'guard';
interface Config {
  port?: number;
  connection?: Record<string, unknown>;
  url?: string;
  resource: string;
}
type Outcome = Record<string, unknown>;
/** Either SQL store, seen through one client type (the holder never mixes them). */
type SqlStore = SqlFencedStore<PgQueryableLike>;

async function writer(kind: Kind, config: Config) {
  if (kind === 'redis' || kind === 'guard') {
    const { default: Redis } = await import('ioredis');
    const client = new Redis({ host: '127.0.0.1', port: config.port, maxRetriesPerRequest: 1 });
    const store = new RedisFencedStore({ client });
    const backend: LockBackend = new RedisLockBackend({ client });
    const write = async (handle: LockHandle): Promise<Outcome> => {
      if (kind === 'guard') {
        const res = await fetch(config.url as string, {
          method: 'POST',
          headers: fencingHeaders(handle),
        });
        return { status: res.status, body: await res.json() };
      }
      const r = await store.set(config.resource, handle, 'holder');
      return r.accepted ? { accepted: true } : { accepted: false, highest: String(r.highest) };
    };
    return { backend, write };
  }
  const sql =
    kind === 'postgres'
      ? await (async () => {
          const { Pool } = await import('pg');
          const pool = new Pool({ ...config.connection, max: 2 });
          pool.on('error', () => undefined);
          return {
            backend: new PostgresLockBackend({ client: pool }) as LockBackend,
            store: new PostgresFencedStore({ client: pool }) as SqlStore,
          };
        })()
      : await (async () => {
          const { createPool } = await import('mysql2/promise');
          const pool = createPool({ ...config.connection, connectionLimit: 2 });
          return {
            backend: new MySqlLockBackend({ client: pool }) as LockBackend,
            store: new MySqlFencedStore({ client: pool }) as unknown as SqlStore,
          };
        })();
  const write = async (handle: LockHandle): Promise<Outcome> => {
    const column = await sql.store.update(
      { table: 'accounts', set: { owner: 'holder' }, where: { id: 3 } },
      handle,
    );
    const table = await sql.store.transaction(config.resource, handle, async (tx) => {
      await sql.store.update(
        { table: 'accounts', set: { owner: 'holder-tx' }, where: { id: 4 } },
        handle,
        tx,
      );
    });
    return {
      accepted: column.accepted,
      highest: column.accepted ? undefined : String(column.highest),
      tableAccepted: table.accepted,
      tableHighest: table.accepted ? undefined : String(table.highest),
    };
  };
  return { backend: sql.backend, write };
}

runHolder(async (channel) => {
  const [kind, configJson, key, ttl] = process.argv.slice(2) as [Kind, string, string, string];
  const config = JSON.parse(configJson) as Config;
  const { backend, write } = await writer(kind, config);
  @Module({ imports: [DistributedLockModule.forRoot({ backend, keyPrefix: 'fenced-test:' })] })
  class HolderModule {}
  const app = await NestFactory.createApplicationContext(HolderModule, { logger: false });
  const handle = await app.get(LockService).acquire(key, { ttl: Number(ttl), wait: 10_000 });
  const first = await write(handle);
  channel.onCommand((command) => {
    if (command.type !== 'write') return;
    write(handle).then(
      (outcome) => channel.send({ type: 'wrote', ...outcome }),
      (error: unknown) => channel.send({ type: 'error', error: String(error) }),
    );
  });
  channel.send({ type: 'held', token: handle.fencingToken.toString(), ...first });
});
