import { hostname } from 'node:os';
import Redis from 'ioredis';
import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { lockKeys } from '../../lib/backends/redis-client';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { RedlockMasters } from '../redlock/redlock.servers';
import { eventually } from '../support/eventually';
import { RedisServer } from '../support/redis-server';

/**
 * Who holds a lock, as inspect() reports it from what each grant stored: the holder's host, pid
 * and the engine's `instance` name, for an exclusive holder, shared holders, a grant handed over to
 * a waiter, on Redis, Redlock and memory; and on Redis none is shown once released.
 */
const me = (instance: string) => ({
  host: hostname().slice(0, 64),
  pid: String(process.pid),
  instance,
});

let server: RedisServer;
let masters: RedlockMasters;
const clients: Redis[] = [];
const engines: LockEngine[] = [];

function redis(): RedisLockBackend {
  const client = new Redis({ port: server.port, host: '127.0.0.1' });
  clients.push(client);
  return new RedisLockBackend({ client });
}

function engine(backend: LockBackend, instance?: string): LockEngine {
  const e = new LockEngine({ backend, instance, defaults: { ttl: 10_000 } });
  engines.push(e);
  return e;
}

beforeAll(async () => {
  [server, masters] = await Promise.all([RedisServer.start(), RedlockMasters.start(3)]);
});

afterAll(async () => {
  for (const e of engines) await e.close();
  clients.forEach((c) => c.disconnect());
  await Promise.all([server?.destroy(), masters?.destroy()]);
});

describe('holder identity in inspect()', () => {
  it('Redis: an exclusive holder, a waiter it hands over to, shared holders; none once released', async () => {
    const ops = redis();
    const api = engine(redis(), 'orders-api');
    const worker = engine(redis(), 'billing-worker');
    const held = await api.acquire('h:x');
    expect((await ops.inspect('lock:h:x')).holders).toEqual([
      expect.objectContaining({ owner: expect.any(String), metadata: me('orders-api') }),
    ]);
    const waiting = worker.acquire('h:x', { wait: 5_000 });
    await eventually(async () => (await ops.inspect('lock:h:x')).waiters === 1);
    await held.release();
    const handed = await waiting;
    expect((await ops.inspect('lock:h:x')).holders[0].metadata).toEqual(me('billing-worker'));
    await handed.release();
    // Released: no holder is shown; the record left behind names an old owner and expires with
    // the fence (fenceRetention).
    expect((await ops.inspect('lock:h:x')).holders).toEqual([]);
    expect(Number(server.cli('PTTL', lockKeys('lock:h:x').holder))).toBeGreaterThan(0);

    const r1 = await api.acquire('h:s', { mode: 'shared' });
    const r2 = await worker.acquire('h:s', { mode: 'shared' });
    const shared = await ops.inspect('lock:h:s');
    expect(shared.holders.map((h) => h.metadata?.instance).sort()).toEqual([
      'billing-worker',
      'orders-api',
    ]);
    await r1.release();
    expect(server.cli('HKEYS', lockKeys('lock:h:s').holders)).toBe(r2.owner);
    await r2.release();
  });

  it('Redis: the default instance is host:pid', async () => {
    const held = await engine(redis()).acquire('h:default');
    const [holder] = (await redis().inspect('lock:h:default')).holders;
    expect(holder.metadata).toEqual(me(`${hostname().slice(0, 64)}:${process.pid}`));
    await held.release();
  });

  it('Redlock: the holder a majority of masters name, with its identity', async () => {
    const held = await engine(await masters.backend(), 'report-job').acquire('h:r');
    const seen = await (await masters.backend()).inspect('lock:h:r');
    expect(seen.holders).toEqual([expect.objectContaining({ metadata: me('report-job') })]);
    await held.release();
  });

  it('memory: the holder beside the grant', async () => {
    const backend = new MemoryLockBackend();
    const held = await engine(backend, 'inline').acquire('h:m');
    expect((await backend.inspect('lock:h:m')).holders[0].metadata).toEqual(me('inline'));
    await held.release();
  });
});
