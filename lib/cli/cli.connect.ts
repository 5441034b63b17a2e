import { EtcdLockBackend } from '../backends/etcd/etcd.backend';
import { MySqlLockBackend } from '../backends/mysql/mysql.backend';
import { PostgresLockBackend } from '../backends/postgres/postgres.backend';
import { RedisLockBackend } from '../backends/redis/redis.backend';
import { ZooKeeperLockBackend } from '../backends/zookeeper/zookeeper.backend';
import type { LockBackend } from '../interfaces/lock-backend.interface';
import { CliUsageError } from './cli.args';

/** ms a connection attempt of the command may take before the backend counts as unavailable. */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * The backend a URL names, over a client the command makes (and closes with the backend). The
 * driver is the one the project installed (the package's optional peer): the command loads it,
 * the library never does.
 */
export function backendFromUrl(raw: string, table?: string): LockBackend {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliUsageError(`--url is not a URL: "${raw.slice(0, 200)}"`);
  }
  switch (url.protocol) {
    case 'redis:':
    case 'rediss:': {
      const { Redis } = driver<typeof import('ioredis')>('ioredis');
      return new RedisLockBackend({
        notifications: false,
        // A command gives up rather than reconnecting: no server means exit 3, not a hang.
        clientFactory: () =>
          new Redis(raw, {
            connectTimeout: CONNECT_TIMEOUT_MS,
            maxRetriesPerRequest: 1,
            retryStrategy: (times: number) => (times > 2 ? null : 200),
          }),
      });
    }
    case 'etcd:': {
      const { Etcd3 } = driver<typeof import('etcd3')>('etcd3');
      const hosts = `http://${hostPort(url, 2379)}`;
      return new EtcdLockBackend({ clientFactory: () => new Etcd3({ hosts }) });
    }
    case 'zk:':
    case 'zookeeper:': {
      const zk = driver<typeof import('node-zookeeper-client')>('node-zookeeper-client');
      const hosts = hostPort(url, 2181);
      const basePath = url.pathname && url.pathname !== '/' ? url.pathname : undefined;
      return new ZooKeeperLockBackend({
        clientFactory: () => zk.createClient(hosts, { sessionTimeout: 10_000, retries: 1 }),
        ...(basePath ? { basePath } : {}),
      });
    }
    case 'postgres:':
    case 'postgresql:':
    case 'mysql:':
    case 'mariadb:':
      return sqlBackend(url, raw, table);
    default:
      throw new CliUsageError(
        `unsupported URL scheme "${url.protocol}" (redis, rediss, etcd, zk, postgres, mysql)`,
      );
  }
}

/** PostgreSQL and MySQL: a small pool, no LISTEN, and never a table of the command's making. */
function sqlBackend(url: URL, raw: string, table: string | undefined): LockBackend {
  const sql = table === undefined ? {} : { table };
  if (url.protocol.startsWith('postgres')) {
    const { Pool } = driver<typeof import('pg')>('pg');
    return new PostgresLockBackend({
      clientFactory: () => {
        const pool = new Pool({
          connectionString: raw,
          max: 2,
          connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        });
        pool.on('error', () => undefined); // a dropped idle connection: the next call says so
        return pool;
      },
      notifications: false,
      createTable: false,
      ...sql,
    });
  }
  const mysql = driver<typeof import('mysql2/promise')>('mysql2/promise');
  const uri = raw.replace(/^mariadb:/, 'mysql:');
  return new MySqlLockBackend({
    clientFactory: () =>
      mysql.createPool({ uri, connectionLimit: 2, connectTimeout: CONNECT_TIMEOUT_MS }),
    createTable: false,
    ...sql,
  });
}

function hostPort(url: URL, port: number): string {
  if (!url.hostname) throw new CliUsageError(`--url has no host: "${url.href}"`);
  return `${url.hostname}:${url.port || port}`;
}

function driver<T>(name: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(name) as T;
  } catch {
    throw new CliUsageError(`this URL needs the driver "${name}": npm install ${name}`);
  }
}
