import { join } from 'node:path';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { freePort, ServerProcess } from '../support/server-process';
import { transpiledEnv } from '../support/transpiled';

/**
 * The registry that plugs a backend into the torture harness: how the harness starts its servers
 * (privately, on loopback, reusing test/support), which of them the nemesis may kill and restart,
 * and how a worker process builds the user's client and the LockBackend from a JSON config. Drivers
 * and server harnesses are imported lazily, so a worker loads only its own backend's driver.
 * Adding a backend is one entry here.
 */
export interface ServerControl {
  readonly name: string;
  kill(): Promise<void>;
  start(): Promise<void>;
}

export interface RunningServers {
  /** Loopback ports workers connect to; the harness puts one proxy per worker in front of each. */
  readonly ports: number[];
  /** JSON-serialisable client config for a worker that must use `ports` (its proxies, in order). */
  clientConfig(ports: number[]): unknown;
  /** Servers (or cluster members) the nemesis may SIGKILL and start again. */
  readonly restartable: ServerControl[];
  /** Why `restart` cannot apply, when restartable is empty. */
  readonly restartNote?: string;
  stop(): Promise<void>;
}

export interface WorkerBackend {
  readonly backend: LockBackend;
  /** Closes the client the worker created (the backend never closes it). */
  close(): Promise<void>;
}

export interface TortureBackend {
  /** `dir`: a temp dir for this run; `build`: root of the JavaScript build (test/support/transpiled.ts). */
  start(dir: string, build: string): Promise<RunningServers>;
  /** In a worker: the user's client and the backend over it; `ttl` is the run's lock ttl (ms). */
  connect(config: any, ttl: number): Promise<WorkerBackend>;
  /** Lock ttl (ms) when --ttl is not given, and the smallest the backend accepts (session-based backends). */
  ttl?: { default: number; min: number; step?: number };
  /** 'best-effort' where the backend cannot promise token order (Redlock): reported, not a violation. */
  fencing?: 'strict' | 'best-effort';
}

/** A ServerProcess as a nemesis target; `kill` may be a gentler crash (postgres: SIGQUIT). */
function control(
  name: string,
  server: { kill(): Promise<void>; start(): Promise<void> },
): ServerControl {
  return { name, kill: () => server.kill(), start: () => server.start() };
}

/** Redis with every write fsynced: fence counters must survive a restart, or tokens go backwards. */
const DURABLE_REDIS = ['--appendonly', 'yes', '--appendfsync', 'always'];

/** Every backend name the harness knows; those without a registry entry have not landed yet. */
export const BACKEND_NAMES = [
  'memory',
  'redis',
  'redlock',
  'etcd',
  'zookeeper',
  'mysql',
  'postgres',
] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

export const TORTURE_BACKENDS: Partial<Record<BackendName, TortureBackend>> = {
  memory: {
    async start(dir, build) {
      const port = await freePort();
      const server = new ServerProcess(
        {
          name: 'memory-lock-server',
          command: process.execPath,
          args: [join(build, 'test/torture/memory-lock.server.js'), String(port)],
          port,
          env: transpiledEnv(),
        },
        dir,
      );
      await server.start();
      return {
        ports: [port],
        clientConfig: ([p]) => ({ port: p }),
        restartable: [],
        restartNote:
          'the memory backend keeps its locks and fence counters in one process; a restart loses them by design',
        stop: () => server.kill(),
      };
    },
    async connect(config: { port: number }) {
      const { MemoryRemoteBackend } = await import('./memory-remote.backend');
      const backend = new MemoryRemoteBackend(config.port);
      return { backend, close: async () => undefined };
    },
  },

  redis: {
    async start() {
      const { RedisServer } = await import('../support/redis-server');
      const server = await RedisServer.start(DURABLE_REDIS);
      return {
        ports: [server.port],
        clientConfig: ([port]) => ({ port }),
        restartable: [control(`redis:${server.port}`, server)],
        stop: () => server.destroy(),
      };
    },
    async connect(config: { port: number }) {
      const { default: Redis } = await import('ioredis');
      const { RedisLockBackend } = await import('../../lib/backends/redis');
      const client = new Redis({ host: '127.0.0.1', port: config.port, lazyConnect: false });
      client.on('error', () => undefined);
      return {
        backend: new RedisLockBackend({ client }),
        close: async () => void client.disconnect(),
      };
    },
  },

  redlock: {
    fencing: 'best-effort',
    async start() {
      const { RedisServer } = await import('../support/redis-server');
      // Durable masters: Redlock's own safety argument needs a restarted master to keep its keys.
      const masters = await Promise.all(
        Array.from({ length: 5 }, () => RedisServer.start(DURABLE_REDIS)),
      );
      return {
        ports: masters.map((m) => m.port),
        clientConfig: (ports) => ({ ports }),
        restartable: masters.map((m) => control(`redis:${m.port}`, m)),
        stop: async () => void (await Promise.all(masters.map((m) => m.destroy()))),
      };
    },
    async connect(config: { ports: number[] }) {
      const { default: Redis } = await import('ioredis');
      const { RedlockBackend } = await import('../../lib/backends/redlock');
      // Fail fast while a master is down: Redlock needs answers from a majority, not from all.
      const clients = config.ports.map(
        (port) =>
          new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, retryStrategy: () => 100 }),
      );
      for (const c of clients) c.on('error', () => undefined);
      return {
        backend: new RedlockBackend({ clients }),
        close: async () => clients.forEach((c) => c.disconnect()),
      };
    },
  },

  etcd: {
    ttl: { default: 2_000, min: 2_000, step: 1_000 },
    async start() {
      const { EtcdCluster } = await import('../support/etcd-server');
      const cluster = await EtcdCluster.start(3);
      return {
        ports: cluster.members.map((m) => m.port),
        clientConfig: (ports) => ({ hosts: ports.map((p) => `http://127.0.0.1:${p}`) }),
        restartable: cluster.members.map((m) => control(m.memberName, m)),
        stop: () => cluster.destroy(),
      };
    },
    async connect(config: { hosts: string[] }, ttl) {
      const { Etcd3 } = await import('etcd3');
      const { EtcdLockBackend } = await import('../../lib/backends/etcd');
      const client = new Etcd3({ hosts: config.hosts });
      return {
        backend: new EtcdLockBackend({ client, sessionTtl: ttl }),
        close: async () => client.close(),
      };
    },
  },

  zookeeper: {
    ttl: { default: 1_500, min: 200 },
    async start() {
      const { ZooKeeperEnsemble } = await import('../support/zookeeper-server');
      const ensemble = await ZooKeeperEnsemble.start(3);
      return {
        ports: ensemble.ports,
        clientConfig: (ports) => ({
          connectionString: ports.map((p) => `127.0.0.1:${p}`).join(','),
        }),
        restartable: ensemble.servers.map((s, i) =>
          control(`zookeeper-${i + 1}`, {
            kill: () => s.kill(),
            start: async () => (await s.start(), await ensemble.untilServing(i)),
          }),
        ),
        stop: () => ensemble.destroy(),
      };
    },
    async connect(config: { connectionString: string }, ttl) {
      const { newZkClient } = await import('../support/zookeeper-server');
      const { ZooKeeperLockBackend } = await import('../../lib/backends/zookeeper');
      // A factory: after a session expiry (pause, partition) the backend opens a new session.
      const backend = new ZooKeeperLockBackend({
        clientFactory: () => newZkClient(config.connectionString, ttl),
        sessionTimeout: ttl,
      });
      return { backend, close: async () => undefined };
    },
  },

  mysql: {
    async start() {
      const { MariaDbServer } = await import('../support/mariadb-server');
      const server = await MariaDbServer.start();
      return {
        ports: [server.port],
        clientConfig: ([port]) => ({ ...server.connection, port }),
        restartable: [control(`mariadb:${server.port}`, server)],
        stop: () => server.destroy(),
      };
    },
    async connect(config: Record<string, unknown>) {
      const { createPool } = await import('mysql2/promise');
      const { MySqlLockBackend } = await import('../../lib/backends/mysql');
      const pool = createPool({ ...config, connectionLimit: 4, connectTimeout: 2_000 });
      return {
        backend: new MySqlLockBackend({ client: pool }),
        close: () => pool.end().catch(() => undefined),
      };
    },
  },

  postgres: {
    async start() {
      const { PostgresServer } = await import('../support/postgres-server');
      const server = await PostgresServer.start();
      return {
        ports: [server.port],
        clientConfig: ([port]) => ({ ...server.connection, port }),
        // SIGQUIT: the postmaster's own crash path (SIGKILL would orphan its backends).
        restartable: [
          control(`postgres:${server.port}`, {
            kill: () => server.crash(),
            start: () => server.start(),
          }),
        ],
        stop: () => server.destroy(),
      };
    },
    async connect(config: Record<string, unknown>) {
      const { Pool } = await import('pg');
      const { PostgresLockBackend } = await import('../../lib/backends/postgres');
      const pool = new Pool({ ...config, max: 4, connectionTimeoutMillis: 2_000 });
      pool.on('error', () => undefined); // idle clients die with the server during restarts
      return {
        backend: new PostgresLockBackend({ client: pool }),
        close: () => pool.end().catch(() => undefined),
      };
    },
  },
};
