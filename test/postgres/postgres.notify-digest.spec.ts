import { Client, Pool, type Notification } from 'pg';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { keyDigest } from '../../lib/backends/sql/key-digest';
import { LockEngine } from '../../lib/core/lock-engine';
import { PostgresServer } from '../support/postgres-server';
import { eventually } from '../support/eventually';

/**
 * Issue 14.10: a release's NOTIFY carried the full key in clear, so any role that may LISTEN on the
 * channel read every tenant's lock keys. It now carries a digest; waiters still wake on it.
 */
describe('regression: PostgreSQL NOTIFY carries a digest of the key, not the key', () => {
  let server: PostgresServer;
  let pools: Pool[] = [];
  let spy: Client;
  const heard: Notification[] = [];
  const pool = () => {
    const p = new Pool({ ...server.connection, max: 4 });
    p.on('error', () => undefined);
    pools.push(p);
    return p;
  };

  beforeAll(async () => {
    server = await PostgresServer.start();
    spy = new Client(server.connection);
    await spy.connect();
    spy.on('notification', (n) => heard.push(n));
    await spy.query('LISTEN "distributed_locks_released"');
  });
  afterAll(async () => {
    await spy?.end();
    await Promise.all(pools.map((p) => p.end()));
    pools = [];
    await server?.destroy();
  });

  it('a raw LISTEN sees the SHA-256 prefix of the key, and another backend waiting on the key still wakes', async () => {
    const a = new LockEngine({
      backend: new PostgresLockBackend({ client: pool() }),
      keyPrefix: '',
    });
    const b = new LockEngine({
      backend: new PostgresLockBackend({ client: pool(), maxPollDelay: 60_000 }),
      keyPrefix: '',
    });
    try {
      const key = 'tenant:acme/invoice:42 ✓';
      const held = await a.acquire(key, { ttl: 60_000 });
      const waiting = b.acquire(key, { wait: 30_000 });
      await eventually(
        async () =>
          Number(
            (
              await pools[0].query(
                `SELECT count(*) AS n FROM pg_stat_activity WHERE query = 'LISTEN "distributed_locks_released"'`,
              )
            ).rows[0].n,
          ) >= 2,
      );
      await held.release();
      const next = await waiting; // woken by the digest: polling would wait the holder's 60 s ttl
      await next.release();
      await eventually(() => heard.length >= 2);
      for (const n of heard) {
        expect(n.payload).toBe(keyDigest(key));
        expect(n.payload).toMatch(/^[0-9a-f]{32}$/);
        expect(n.payload).not.toContain('acme');
      }
      expect(keyDigest(key)).toBe(
        require('node:crypto').createHash('sha256').update(key).digest('hex').slice(0, 32),
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
