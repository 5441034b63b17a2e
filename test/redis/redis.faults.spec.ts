import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from '../conformance/conformance-tools';
import { RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';

/**
 * RedisLockBackend (standalone) under process faults: a SIGSTOPped server (the holder cannot renew)
 * and a SIGKILLed server restarted empty (no persistence). What must hold: the holder learns of the
 * loss before anybody else is granted the lock, and fencing tokens keep growing.
 */
const TTL = 500;
let server: RedisServer;
let clients: Redis[] = [];
let engines: LockEngine[] = [];

const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;
function engine(): LockEngine {
  const client = new Redis({
    port: server.port,
    host: '127.0.0.1',
    maxRetriesPerRequest: 1,
    retryStrategy: () => 50,
  });
  client.on('error', () => undefined);
  clients.push(client);
  const e = new LockEngine({
    backend: new RedisLockBackend({ client }),
    keyPrefix: 'rf:',
    defaults: { ttl: TTL, wait: 10_000 },
    operationTimeout: 1_000,
  });
  engines.push(e);
  return e;
}

beforeAll(async () => {
  server = await RedisServer.start();
});

afterEach(async () => {
  server.resume();
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
  clients.forEach((c) => c.disconnect());
  clients = [];
});

afterAll(async () => server?.destroy());

describe('RedisLockBackend: server faults', () => {
  it('server SIGSTOPped for longer than the ttl: the holder is told before the waiter is granted', async () => {
    const a = engine();
    const b = engine();
    const k = key('stop');
    const held = await a.acquire(k);
    let lostAt = 0;
    held.signal.addEventListener('abort', () => (lostAt = performance.now()), { once: true });
    const waiting = b.acquire(k);
    server.pause();
    const pausedAt = performance.now();
    expect(await untilAborted(held.signal, 10 * TTL)).toBeInstanceOf(LockLostError);
    // Frozen for well past the ttl: by wall clock the key has expired when the server wakes.
    await eventually(() => performance.now() - pausedAt > 3 * TTL, 10_000, 20);
    server.resume();
    const next = await waiting;
    const grantedAt = performance.now();
    expect(lostAt).toBeGreaterThan(0);
    expect(lostAt).toBeLessThan(grantedAt);
    expect(next.fencingToken > held.fencingToken).toBe(true);
    process.stdout.write(
      `[redis faults] SIGSTOP: holder told ${(lostAt - pausedAt).toFixed(0)} ms after the pause (ttl ${TTL}); waiter granted ${(grantedAt - pausedAt).toFixed(0)} ms after it\n`,
    );
    await next.release();
  });

  it('server SIGKILLed and restarted empty while a lock is held: the holder is told, a new owner gets it, tokens still grow', async () => {
    const a = engine();
    const b = engine();
    const k = key('restart');
    const held = await a.acquire(k);
    await server.kill();
    await server.start();
    expect(await untilAborted(held.signal, 10 * TTL)).toBeInstanceOf(LockLostError);
    const next = await b.acquire(k, { wait: 5_000 });
    // The fence counter died with the server; the time-based floor of the token keeps it growing.
    expect(next.fencingToken > held.fencingToken).toBe(true);
    await next.release();
  });
});
