import Redis, { Cluster } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { RedisClusterServers, RedisServer } from '../support/redis-server';
import { describeLockConformance } from './lock-conformance';

let server: RedisServer;
let clients: Redis[] = [];

describeLockConformance(
  'redis standalone',
  async () => {
    server = await RedisServer.start();
    const connect = () => {
      const c = new Redis({
        port: server.port,
        host: '127.0.0.1',
        maxRetriesPerRequest: 1,
        retryStrategy: () => 100,
      });
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
      crash: async (backend) => (backend as unknown as { client: Redis }).client.disconnect(),
      outage: { stop: () => server.kill(), start: () => server.start() },
      closeAll: async () => {
        clients.forEach((c) => c.disconnect());
        clients = [];
      },
    };
  },
  async () => server?.destroy(),
);

let cluster: RedisClusterServers;
let clusterClients: Cluster[] = [];

describeLockConformance(
  'redis cluster (3 masters)',
  async () => {
    cluster = await RedisClusterServers.start(3);
    const connect = () => {
      const c = new Cluster(
        cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
        {
          redisOptions: { maxRetriesPerRequest: 1 },
          clusterRetryStrategy: () => 100,
        },
      );
      c.on('error', () => undefined);
      clusterClients.push(c);
      return c;
    };
    const admin = connect();
    return {
      createBackend: () => new RedisLockBackend({ client: connect() }),
      forceDelete: async (fullKey) => {
        const k = lockKeys(fullKey);
        await admin.del(k.writer, k.readers);
      },
      crash: async (backend) => (backend as unknown as { client: Cluster }).client.disconnect(),
      outage: {
        stop: async () => {
          await Promise.all(cluster.nodes.map((n) => n.kill()));
        },
        start: async () => {
          await Promise.all(cluster.nodes.map((n) => n.start()));
        },
      },
      closeAll: async () => {
        clusterClients.forEach((c) => c.disconnect());
        clusterClients = [];
      },
    };
  },
  async () => cluster?.destroy(),
);
