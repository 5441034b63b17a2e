import Redis, { Cluster } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { RedisClusterServers, RedisServer } from '../support/redis-server';
import { describeLockConformance, type ConformanceFixture } from './lock-conformance';

/**
 * The conformance fixture over one Redis deployment: each backend on a connection of its own from
 * `open` (errors swallowed: outages are part of the suite), forceDelete through one more, and
 * every connection closed by closeAll.
 */
function redisFixture(
  open: () => Redis | Cluster,
  outage: NonNullable<ConformanceFixture['outage']>,
): ConformanceFixture {
  const clients: (Redis | Cluster)[] = [];
  const connect = () => {
    const c = open();
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  };
  const admin = connect();
  return {
    createBackend: () => new RedisLockBackend({ client: connect() }),
    forceDelete: async (fullKey) => {
      const k = lockKeys(fullKey);
      await admin.del(k.writer, k.readers);
    },
    crash: async (backend) =>
      (backend as unknown as { client: Redis | Cluster }).client.disconnect(),
    outage,
    closeAll: async () => {
      clients.splice(0).forEach((c) => c.disconnect());
    },
  };
}

let server: RedisServer;

describeLockConformance({
  name: 'redis standalone',
  setup: async () => {
    server = await RedisServer.start();
    return redisFixture(
      () =>
        new Redis({
          port: server.port,
          host: '127.0.0.1',
          maxRetriesPerRequest: 1,
          retryStrategy: () => 100,
        }),
      { stop: () => server.kill(), start: () => server.start() },
    );
  },
  teardown: async () => server?.destroy(),
});

let cluster: RedisClusterServers;

describeLockConformance({
  name: 'redis cluster (3 masters)',
  setup: async () => {
    cluster = await RedisClusterServers.start(3);
    return redisFixture(
      () =>
        new Cluster(
          cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
          {
            redisOptions: { maxRetriesPerRequest: 1 },
            clusterRetryStrategy: () => 100,
          },
        ),
      {
        stop: async () => {
          await Promise.all(cluster.nodes.map((n) => n.kill()));
        },
        start: async () => {
          await Promise.all(cluster.nodes.map((n) => n.start()));
        },
      },
    );
  },
  teardown: async () => cluster?.destroy(),
});
