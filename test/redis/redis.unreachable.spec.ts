import { createServer, type AddressInfo } from 'node:net';
import Redis, { type RedisOptions } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { RedisServer } from '../support/redis-server';

/**
 * A Redis URL that points nowhere (a closed port, a host that does not resolve): the caller learns
 * the connection's own error, and once the client knows the server is down, a request with a long
 * wait fails at once (the wait is far longer than the test's timeout: waiting it out fails it).
 * A server that was up and goes away for a moment (a restart, a failover) is not "known down": a
 * wait rides out its return.
 */
const LONG_MS = 120_000;
const TEST_MS = 30_000;

function engineFor(options: RedisOptions) {
  const clients: Redis[] = [];
  const engine = new LockEngine({
    backend: new RedisLockBackend({
      clientFactory: () => {
        // disconnectTimeout: ioredis's disconnect() waits this long (default 2 s, on a ref'd timer)
        // for a 'close' that a socket which never connected has already emitted: it kept Jest
        // open 2 s after this spec. Nothing is left to wait for here.
        const client = new Redis({ ...options, retryStrategy: () => 50, disconnectTimeout: 0 });
        clients.push(client);
        return client;
      },
    }),
    keyPrefix: 'unreachable:',
    operationTimeout: LONG_MS,
    defaults: { wait: LONG_MS },
  });
  return { engine, clients };
}

/** A loopback port nobody listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: Error) => error,
  );
}

describe('Redis backend whose server cannot be reached', () => {
  it(
    'names ECONNREFUSED for a closed port, on the first request and on the ones after',
    async () => {
      const { engine, clients } = engineFor({ host: '127.0.0.1', port: await closedPort() });
      try {
        const first = await failure(engine.acquire('a'));
        expect(first).toBeInstanceOf(LockBackendUnavailableError);
        expect(first.message).toContain('ECONNREFUSED');
        // The client now knows the server is down: the next request does not queue behind it.
        const second = await failure(engine.acquire('b', { wait: LONG_MS }));
        expect(second.message).toContain('ECONNREFUSED');
        const inspected = await failure(engine.operator.inspect('c'));
        expect(inspected.message).toContain('ECONNREFUSED');
      } finally {
        // Ended first: a QUIT to a server that is not there would wait for its own time bound.
        for (const c of clients) c.disconnect();
        await engine.close();
      }
    },
    TEST_MS,
  );

  it(
    'names ENOTFOUND for a host that does not resolve',
    async () => {
      const { engine, clients } = engineFor({ host: 'no-such-host.invalid', port: 6379 });
      try {
        const error = await failure(engine.acquire('a'));
        expect(error).toBeInstanceOf(LockBackendUnavailableError);
        expect(error.message).toMatch(/ENOTFOUND|EAI_AGAIN/);
      } finally {
        // Ended first: a QUIT to a server that is not there would wait for its own time bound.
        for (const c of clients) c.disconnect();
        await engine.close();
      }
    },
    TEST_MS,
  );

  it(
    'rides out a restart of a server it had reached: a wait begun while it is down is granted once it is back',
    async () => {
      const server = await RedisServer.start();
      const { engine, clients } = engineFor({ host: '127.0.0.1', port: server.port });
      try {
        await (await engine.acquire('before', { wait: 0 })).release();
        await server.kill();
        await eventuallyDown(clients[0]);
        const during = engine.acquire('during', { wait: 20_000, ttl: 5_000 });
        await server.start();
        const handle = await during;
        expect(handle.held).toBe(true);
        await handle.release();
      } finally {
        await engine.close();
        await server.destroy();
      }
    },
    TEST_MS,
  );
});

/** Resolves once the client has seen its server go (its status leaves 'ready'). */
function eventuallyDown(client: Redis): Promise<void> {
  if (client.status !== 'ready') return Promise.resolve();
  return new Promise((resolve) => client.once('close', () => resolve()));
}
