import { Etcd3 } from 'etcd3';
import Redis from 'ioredis';
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { RedlockBackend } from '../../lib/backends/redlock';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper';
import { connectedZkClient } from '../support/zookeeper-server';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import type { BenchServers, System } from './bench.servers';

/**
 * What every contender of a scenario looks like to the harness: connect() opens a new client (as
 * another process would), lock() takes one key and resolves its release. Ours goes through the
 * full LockEngine path (owner token, deadline, watchdog registration), as LockService and @Locked do.
 */
export interface LockClient {
  /** Takes `key`, waiting as the library waits; rejects when it gives up. Resolves the release. */
  lock(key: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface Contender {
  readonly name: string;
  readonly system: System;
  readonly ours: boolean;
  /** How this contender waits when the key is busy (shown in the tables). */
  readonly waits: string;
  connect(servers: BenchServers): Promise<LockClient>;
}

/** ttl given to every lock of every contender in the latency scenarios (ms). */
export const BENCH_TTL_MS = 10_000;
/** How long ours waits for a busy key (ms): our documented default wait. */
export const BENCH_WAIT_MS = 10_000;

export function redisClient(port: number): Redis {
  const c = new Redis({ port, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: 1 });
  c.on('error', () => undefined);
  return c;
}

/** One of our backends over a new client, with a close() for that client. */
export interface OurBackend {
  backend: LockBackend;
  closeClient(): Promise<void>;
}

const sharedMemory = new MemoryLockBackend();

/** Builds our backend for `system` over a new client to the run's servers. */
export async function ourBackend(system: System, servers: BenchServers): Promise<OurBackend> {
  await servers.need(system);
  switch (system) {
    case 'memory':
      // In-process: every "process" shares one backend, the way one Node process would.
      return { backend: sharedMemory, closeClient: async () => undefined };
    case 'redis': {
      const client = redisClient(servers.redis!.port);
      return {
        backend: new RedisLockBackend({ client }),
        closeClient: async () => void client.disconnect(),
      };
    }
    case 'redlock': {
      const clients = servers.redlock!.map((s) => redisClient(s.port));
      return {
        backend: new RedlockBackend({ clients }),
        closeClient: async () => clients.forEach((c) => c.disconnect()),
      };
    }
    case 'etcd': {
      const client = new Etcd3({ hosts: servers.etcd!.hosts() });
      return { backend: new EtcdLockBackend({ client }), closeClient: async () => client.close() };
    }
    case 'zookeeper': {
      const client = await connectedZkClient(servers.zookeeper!.connectionString, 10_000);
      return {
        backend: new ZooKeeperLockBackend({ client }),
        closeClient: async () => client.close(),
      };
    }
    case 'mysql': {
      const client = createPool({ ...servers.mysql!.connection, connectionLimit: 4 });
      return { backend: new MySqlLockBackend({ client }), closeClient: () => client.end() };
    }
    case 'postgres': {
      const client = new Pool({ ...servers.postgres!.connection, max: 4 });
      client.on('error', () => undefined);
      return { backend: new PostgresLockBackend({ client }), closeClient: () => client.end() };
    }
  }
}

/** Ours on `system`, through the LockEngine. */
export function ours(system: System): Contender {
  return {
    name: `ours (${system})`,
    system,
    ours: true,
    waits:
      system === 'mysql'
        ? 'release notify (GET_LOCK), FIFO tickets'
        : system === 'postgres'
          ? 'NOTIFY, FIFO tickets'
          : system === 'memory'
            ? 'in-process notification'
            : 'notification (pub/sub or watch)',
    async connect(servers) {
      const { backend, closeClient } = await ourBackend(system, servers);
      const engine = new LockEngine({
        backend,
        keyPrefix: 'bench:',
        defaults: { ttl: BENCH_TTL_MS, wait: BENCH_WAIT_MS },
      });
      return {
        async lock(key) {
          const handle = await engine.acquire(key);
          return () => handle.release();
        },
        async close() {
          await engine.close();
          await closeClient();
        },
      };
    },
  };
}
