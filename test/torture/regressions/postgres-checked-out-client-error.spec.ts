import { Pool } from 'pg';
import { LockBackendUnavailableError, LockEngine } from '../../../lib';
import { PostgresLockBackend } from '../../../lib/backends/postgres';
import { PostgresServer } from '../../support/postgres-server';
import { eventually } from '../../support/eventually';
import { TcpProxy } from '../../support/tcp-proxy';

/**
 * Found by the torture harness (postgres, restart fault): every worker process died at the first
 * server restart with "Unhandled 'error' event ... Connection terminated unexpectedly", thrown by a
 * pg Client. The user's pool has pool.on('error') (that covers idle clients only); a client the
 * backend has checked out emits 'error' on itself when its connection drops, and pg then throws if
 * nobody listens. A database restart must fail the lock call, not crash the application.
 */
describe('regression: postgres connection dropped while a pooled client is checked out', () => {
  let server: PostgresServer;
  let proxy: TcpProxy;
  let pool: Pool;
  let engine: LockEngine;
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);

  beforeAll(async () => {
    server = await PostgresServer.start();
    proxy = await TcpProxy.start({ port: server.port });
    pool = new Pool({
      ...server.connection,
      port: proxy.port,
      max: 2,
      connectionTimeoutMillis: 2_000,
    });
    pool.on('error', () => undefined); // what every pg user does for idle clients
    engine = new LockEngine({ backend: new PostgresLockBackend({ client: pool }) });
    process.on('uncaughtException', onUncaught);
  }, 60_000);

  afterAll(async () => {
    process.off('uncaughtException', onUncaught);
    await engine?.close();
    await pool?.end().catch(() => undefined);
    await proxy?.close();
    await server?.destroy();
  });

  it('fails the acquire with LockBackendUnavailableError and throws nothing uncaught', async () => {
    await (await engine.acquire('warm-up', { ttl: 1_000 })).release(); // table and LISTEN ready
    proxy.blackhole();
    const attempt = engine.acquire('dropped', { ttl: 1_000, wait: 0 }).catch((e: unknown) => e);
    await eventually(() => proxy.held > 0); // the acquire's query is on the wire: its client is checked out
    proxy.resetAll();
    proxy.heal();
    expect(await attempt).toBeInstanceOf(LockBackendUnavailableError);
    // Give a late 'error' event the same turn of the loop it would take to surface.
    await new Promise((r) => setImmediate(r));
    expect(uncaught.map(String)).toEqual([]);
  });
});
