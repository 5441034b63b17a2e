import Redis, { type RedisOptions } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { RedisServer } from '../support/redis-server';

/** One "process": an engine over a backend with a connection of its own. */
export interface RedisProcess {
  engine: LockEngine;
  client: Redis;
  backend: RedisLockBackend;
}

/**
 * What the Redis queue and semaphore specs share, set up once per test file: a private
 * redis-server, an admin connection that looks at the keys and counts the server's commands, and
 * "processes" (a backend with its own connection; engine with `keyPrefix`, ttl 30 s, wait 60 s),
 * closed and disconnected after each test. `clientOptions` go to each process's connection.
 */
export function redisProcesses(keyPrefix: string, clientOptions: RedisOptions = {}) {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  let clients: Redis[] = [];
  let engines: LockEngine[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis({ port: server.port, host: '127.0.0.1' });
  });

  afterEach(async () => {
    await Promise.all(engines.map((e) => e.close()));
    engines = [];
    clients.forEach((c) => c.disconnect());
    clients = [];
  });

  afterAll(async () => {
    admin?.disconnect();
    await server?.destroy();
  });

  const started = (): RedisServer => {
    if (!server) throw new Error('redisProcesses: used before beforeAll');
    return server;
  };

  return {
    /** The admin connection (after beforeAll). */
    get admin(): Redis {
      started();
      return admin as Redis;
    },
    /** A new process on the private server. */
    processLike(): RedisProcess {
      const client = new Redis({
        port: started().port,
        host: '127.0.0.1',
        maxRetriesPerRequest: 1,
        ...clientOptions,
      });
      client.on('error', () => undefined);
      clients.push(client);
      const backend = new RedisLockBackend({ client });
      const engine = new LockEngine({
        backend,
        keyPrefix,
        defaults: { ttl: 30_000, wait: 60_000 },
      });
      engines.push(engine);
      return { engine, client, backend };
    },
  };
}
