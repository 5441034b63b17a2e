import { join } from 'node:path';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { freePort, ServerProcess } from '../support/server-process';
import { buildEnv } from './torture.build';

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
  /** `dir`: a temp dir for this run; `build`: root of the JavaScript build (torture.build.ts). */
  start(dir: string, build: string): Promise<RunningServers>;
  connect(config: any): Promise<WorkerBackend>;
}

/** Every backend name the harness knows; those without a registry entry have not landed yet. */
export const BACKEND_NAMES = ['memory', 'redis', 'redlock', 'etcd', 'zookeeper', 'mysql', 'postgres'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];


export const TORTURE_BACKENDS: Partial<Record<BackendName, TortureBackend>> = {
  memory: {
    async start(dir, build) {
      const port = await freePort();
      const server = new ServerProcess({ name: 'memory-lock-server', command: process.execPath, args: [join(build, 'test/torture/memory-lock.server.js'), String(port)], port, env: buildEnv() }, dir);
      await server.start();
      return {
        ports: [port],
        clientConfig: ([p]) => ({ port: p }),
        restartable: [],
        restartNote: 'the memory backend keeps its locks and fence counters in one process; a restart loses them by design',
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
      // appendfsync always: the fence counter must survive a restart, or tokens go backwards.
      const server = await RedisServer.start(['--appendonly', 'yes', '--appendfsync', 'always']);
      return {
        ports: [server.port],
        clientConfig: ([port]) => ({ port }),
        restartable: [{ name: `redis:${server.port}`, kill: () => server.kill(), start: () => server.start() }],
        stop: () => server.destroy(),
      };
    },
    async connect(config: { port: number }) {
      const { default: Redis } = await import('ioredis');
      const { RedisLockBackend } = await import('../../lib/backends/redis');
      const client = new Redis({ host: '127.0.0.1', port: config.port, lazyConnect: false });
      client.on('error', () => undefined);
      return { backend: new RedisLockBackend({ client }), close: async () => void client.disconnect() };
    },
  },
};
