import { Cluster } from 'ioredis';
import { stopSlotRefresh } from '../../lib/backends/redis-client';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import type { RedisLockBackendOptions } from '../../lib/backends/redis/redis.options';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { keySlot as clusterSlot } from '../../lib/backend-kit/cluster-slot';
import { LockEngine } from '../../lib/core/lock-engine';
import type { RedisClusterGroup } from '../support/redis-cluster';

/**
 * The Cluster client docs/backends/redis-production.md shows: a slot map refreshed every second
 * and a command timeout, so a dead or stalled primary is left for its promoted replica within
 * about a second of the promotion (without them the client follows a stalled primary only when it
 * answers again), and short retry delays during a failover.
 */
export function productionCluster(group: RedisClusterGroup): Cluster {
  const client = new Cluster(group.addresses, {
    slotsRefreshInterval: 1_000,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    redisOptions: { commandTimeout: 1_000, maxRetriesPerRequest: 1 },
  });
  client.on('error', () => undefined);
  return client;
}

/** "Processes" (an engine over its own Cluster client), closed by `closeAll`. */
export function clusterProcesses(keyPrefix: string, getGroup: () => RedisClusterGroup) {
  let clients: Cluster[] = [];
  let engines: LockEngine[] = [];
  return {
    open(options: Omit<RedisLockBackendOptions, 'client' | 'clientFactory'> = {}): LockEngine {
      const client = productionCluster(getGroup());
      clients.push(client);
      const engine = new LockEngine({
        backend: new RedisLockBackend({ client, ...options }),
        keyPrefix,
        operationTimeout: 2_000,
        defaults: { ttl: 30_000, wait: 20_000 },
      });
      engines.push(engine);
      return engine;
    },
    admin(): Cluster {
      const client = productionCluster(getGroup());
      clients.push(client);
      return client;
    },
    async closeAll(): Promise<void> {
      await Promise.all(engines.map((e) => e.close()));
      engines = [];
      for (const c of clients) {
        c.disconnect();
        stopSlotRefresh(c); // else a refresh under way at disconnect() arms the next one for ever
      }
      clients = [];
    },
    /** The Redis key of `key`'s lock (with the prefix): its slot is the lock's. */
    writerKey: (key: string) => lockKeys(keyPrefix + key).writer,
  };
}

/**
 * A key of the form `<base>:<n>` whose lock lives on a primary that has a live replica and is not
 * in `avoid` (the primaries earlier faults already hit).
 */
export function keyOnFreshPrimary(
  group: RedisClusterGroup,
  keyPrefix: string,
  base: string,
  avoid: readonly number[] = [],
): { key: string; primary: number } {
  const owner = group.slotOwners();
  const withReplica = new Map<number, boolean>();
  const eligible = (port: number) => {
    if (!withReplica.has(port)) {
      let ok = false;
      try {
        ok = !avoid.includes(port) && group.replicaOf(port).running;
      } catch {
        ok = false; // no replica
      }
      withReplica.set(port, ok);
    }
    return withReplica.get(port);
  };
  for (let n = 0; n < 10_000; n++) {
    const key = `${base}:${n}`;
    const primary = owner(clusterSlot(lockKeys(keyPrefix + key).writer));
    if (eligible(primary)) return { key, primary };
  }
  throw new Error('no primary with a live replica left');
}
