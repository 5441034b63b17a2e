import { randomBytes } from 'node:crypto';
import Redis, { Cluster } from 'ioredis';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { lockKeys } from '../../lib/backends/redis-client';
import { LockEngine } from '../../lib/core/lock-engine';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import { TcpProxy } from '../support/tcp-proxy';
import { RedlockMasters } from './redlock.servers';

/** Bad Redlock configuration fails at startup with InvalidLockOptionsError naming the option, and locks nothing. */
let masters: RedlockMasters;
let proxy: TcpProxy | undefined;
const extra: Redis[] = [];

beforeAll(async () => {
  masters = await RedlockMasters.start(3);
});

afterAll(async () => {
  extra.forEach((c) => c.disconnect());
  await proxy?.close();
  await masters.destroy();
});

function client(port: number): Redis {
  const c = new Redis({
    port,
    host: '127.0.0.1',
    maxRetriesPerRequest: 1,
    retryStrategy: () => 100,
  });
  c.on('error', () => undefined);
  extra.push(c);
  return c;
}

function rejects(options: unknown, option: string, allowed: RegExp) {
  let error: unknown;
  try {
    new RedlockBackend(options as never);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(InvalidLockOptionsError);
  expect(error).toMatchObject({ option });
  expect((error as Error).message).toMatch(allowed);
}

describe('RedlockBackend options', () => {
  it('fewer than 3 clients, or no array at all', () => {
    const [a, b] = masters.connect();
    rejects(
      { clients: [a, b] },
      'clients',
      /at least 3 .*got array\(2\)|got array\(2\).*at least 3/,
    );
    rejects({ clients: [] }, 'clients', /at least 3/);
    rejects({ clients: a }, 'clients', /at least 3/);
    rejects({}, 'clients', /at least 3/);
    rejects(undefined, 'RedlockBackend options', /clients/);
  });

  it('the same client twice, or two clients of one host:port', () => {
    const [a, b, c] = masters.connect();
    rejects({ clients: [a, b, a] }, 'clients[2]', /different from clients\[0\]/);
    const twin = client(masters.ports[1]);
    rejects({ clients: [a, b, twin] }, 'clients[2]', /server other than clients\[1\]/);
    const viaLocalhost = new Redis({
      port: masters.ports[0],
      host: 'localhost',
      lazyConnect: true,
    });
    rejects({ clients: [a, b, c, viaLocalhost] }, 'clients[3]', /server other than clients\[0\]/);
  });

  it('a client that reaches the same server by another address is caught by run_id at startup', async () => {
    proxy = await TcpProxy.start({ port: masters.ports[2] });
    const [a, b, c] = masters.connect();
    const disguised = client(proxy.port);
    const created = await RedlockBackend.create({ clients: [a, b, c, disguised] }).catch(
      (e: unknown) => e,
    );
    expect(created).toBeInstanceOf(InvalidLockOptionsError);
    expect(created).toMatchObject({ option: 'clients[3]' });
    expect((created as Error).message).toMatch(
      /same redis-server.*clients\[2\]|clients\[2\].*same redis-server/,
    );

    // Built with `new` (no await): the first acquire waits for the check and fails the same way, locking nothing.
    const backend = new RedlockBackend({ clients: [a, b, c, disguised] });
    const engine = new LockEngine({ backend, keyPrefix: 'opt:' });
    const k = `dup:${randomBytes(4).toString('hex')}`;
    const error = await engine.acquire(k, { wait: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    // A waiting acquire fails the same way (bad configuration is not retried like an outage).
    await expect(engine.acquire(k, { wait: 5_000 })).rejects.toBeInstanceOf(
      InvalidLockOptionsError,
    );
    expect(masters.servers.every((s) => s.cli('EXISTS', lockKeys(`opt:${k}`).writer) === '0')).toBe(
      true,
    );
    await engine.close();

    const fine = await RedlockBackend.create({ clients: masters.connect() });
    expect(fine.quorum).toBe(2);
    await fine.close();
  });

  it('a Cluster client or something that is no client', () => {
    const [a, b] = masters.connect();
    const cluster = new Cluster([{ host: '127.0.0.1', port: masters.ports[0] }], {
      lazyConnect: true,
    });
    rejects({ clients: [a, b, cluster] }, 'clients[2]', /standalone/);
    rejects({ clients: [a, b, { evalsha: 1 }] }, 'clients[2]', /ioredis Redis client/);
    rejects({ clients: [a, b, null] }, 'clients[2]', /ioredis Redis client/);
  });

  it('drift factor outside [0, 0.1], and other numeric options', () => {
    const clients = masters.connect();
    for (const driftFactor of [-0.01, 0.11, 1, Number.NaN, Infinity, '0.01'])
      rejects({ clients, driftFactor }, 'driftFactor', /from 0 to 0\.1/);
    rejects({ clients, driftMargin: -1 }, 'driftMargin', /integer number of ms/);
    rejects({ clients, driftMargin: 1.5 }, 'driftMargin', /integer number of ms/);
    rejects({ clients, timeout: 0 }, 'timeout', /integer number of ms from 1/);
    rejects({ clients, retryJitter: -5 }, 'retryJitter', /integer number of ms/);
    rejects({ clients, channel: '' }, 'channel', /non-empty string/);
    rejects({ clients, notifications: 'yes' }, 'notifications', /true or false/);
    rejects({ clients, fenceRetention: 10 }, 'fenceRetention', /from 1000/);
    rejects({ clients, driftFactr: 0.01 }, 'driftFactr', /unknown option.*driftFactor/);
    expect(new RedlockBackend({ clients, driftFactor: 0 }).minTtl).toBe(3);
    expect(new RedlockBackend({ clients, driftFactor: 0.1, driftMargin: 0 }).minTtl).toBe(2);
  });

  it('a ttl that leaves no validity after the drift allowance is rejected naming "ttl", and locks nothing', async () => {
    const backend = await masters.backend({ driftMargin: 100 });
    expect(backend.minTtl).toBe(103);
    const engine = new LockEngine({ backend, keyPrefix: 'opt:' });
    const k = `short:${randomBytes(4).toString('hex')}`;
    const error = await engine.acquire(k, { ttl: 100, wait: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    expect(error).toMatchObject({ option: 'ttl' });
    expect((error as Error).message).toMatch(/at least 103 ms.*driftMargin 100/);
    expect(engine.heldCount).toBe(0);
    expect(masters.servers.every((s) => s.cli('EXISTS', lockKeys(`opt:${k}`).writer) === '0')).toBe(
      true,
    );
    const ok = await engine.acquire(k, { ttl: 500, wait: 0 });
    await ok.release();
    await engine.close();
  });
});
