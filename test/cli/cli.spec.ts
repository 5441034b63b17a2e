import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import Redis from 'ioredis';
import { createPool, type Pool as MySqlPool } from 'mysql2/promise';
import { hostname } from 'node:os';
import { Pool } from 'pg';
import { EtcdLockBackend } from '../../lib/backends/etcd/etcd.backend';
import { MySqlLockBackend } from '../../lib/backends/mysql/mysql.backend';
import { PostgresLockBackend } from '../../lib/backends/postgres/postgres.backend';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { EtcdCluster } from '../support/etcd-server';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';
import { RedisServer } from '../support/redis-server';
import { newZkClient, ZooKeeperServer } from '../support/zookeeper-server';
import { transpiledEnv, transpiledScript } from '../support/transpiled';

/**
 * The operator's command against real servers, run as its own process: it lists a lock this test
 * process holds, inspects it (its holder: this process's host, pid and instance name), refuses to
 * release it without --yes, releases it, and then finds nothing; exit codes 0 / 1 / 2 / 3 as
 * documented.
 */
const ROOT = join(__dirname, '..', '..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const main = transpiledScript(join(ROOT, 'lib/cli/main.ts'));
    const child = spawn(process.execPath, [main, ...args], {
      cwd: ROOT,
      env: transpiledEnv({ ...process.env, LOCK_URL: '' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A backend: its URL for the command, and a way to make backends for "the app's" processes. */
interface Server {
  url: string;
  backend(): LockBackend;
  close(): Promise<void>;
}

const servers: Record<string, () => Promise<Server>> = {
  Redis: async () => {
    const s = await RedisServer.start();
    const clients: Redis[] = [];
    return {
      url: `redis://127.0.0.1:${s.port}`,
      backend: () => {
        const client = new Redis({ host: '127.0.0.1', port: s.port });
        clients.push(client);
        return new RedisLockBackend({ client });
      },
      close: async () => (clients.forEach((c) => c.disconnect()), await s.destroy()),
    };
  },
  etcd: async () => {
    const c = await EtcdCluster.start(1);
    const clients: Etcd3[] = [];
    return {
      url: c.hosts()[0].replace(/^http:/, 'etcd:'),
      backend: () => {
        const client = new Etcd3({ hosts: c.hosts() });
        clients.push(client);
        return new EtcdLockBackend({ client });
      },
      close: async () => (clients.forEach((cl) => cl.close()), await c.destroy()),
    };
  },
  ZooKeeper: async () => {
    const s = await ZooKeeperServer.start();
    return {
      url: `zk://${s.connectionString}/locks`,
      backend: () =>
        new ZooKeeperLockBackend({ clientFactory: () => newZkClient(s.connectionString, 10_000) }),
      close: () => s.destroy(),
    };
  },
  PostgreSQL: async () => {
    const s = await PostgresServer.start();
    const pools: Pool[] = [];
    const { host, port, user, database } = s.connection;
    return {
      url: `postgres://${user}@${host}:${port}/${database}`,
      backend: () => {
        const pool = new Pool({ ...s.connection, max: 4 });
        pool.on('error', () => undefined);
        pools.push(pool);
        return new PostgresLockBackend({ client: pool });
      },
      close: async () => {
        for (const p of pools) await p.end();
        await s.destroy();
      },
    };
  },
  MySQL: async () => {
    const s = await MariaDbServer.start();
    const pools: MySqlPool[] = [];
    const { host, port, user, database } = s.connection;
    return {
      url: `mysql://${user}@${host}:${port}/${database}`,
      backend: () => {
        const pool = createPool({ ...s.connection, connectionLimit: 4 });
        pools.push(pool);
        return new MySqlLockBackend({ client: pool });
      },
      close: async () => {
        for (const p of pools) await p.end();
        await s.destroy();
      },
    };
  },
};

describe.each(Object.keys(servers))('nestjs-distributed-lock CLI on %s', (name) => {
  let server: Server;
  const engines: LockEngine[] = [];
  const engine = (instance?: string) => {
    const e = new LockEngine({ backend: server.backend(), instance });
    engines.push(e);
    return e;
  };

  beforeAll(async () => {
    server = await servers[name]();
  }, 60_000);

  afterAll(async () => {
    for (const e of engines) await e.close();
    await server?.close();
  });

  it('lists, inspects and releases a lock held by another process', async () => {
    const holder = engine('orders-worker-7');
    const held = await holder.acquire('orders:42', { ttl: 30_000 });

    const list = await cli('list', '--url', server.url, '--json');
    expect(list.stderr).toBe('');
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).keys).toContain('orders:42');

    const inspect = await cli('inspect', 'orders:42', '--url', server.url, '--json');
    expect(inspect.code).toBe(0);
    const view = JSON.parse(inspect.stdout);
    expect(view).toMatchObject({ key: 'orders:42', held: true, mode: 'exclusive' });
    expect(view.holders.length).toBe(1);
    // Who holds it: this process, by the identity its grant stored on the server.
    expect(view.holders[0]).toMatchObject({
      host: hostname().slice(0, 64),
      pid: process.pid,
      instance: 'orders-worker-7',
    });
    const described = await cli('inspect', 'orders:42', '--url', server.url);
    expect(described.stdout).toContain(
      `holder ${hostname().slice(0, 64)}:${process.pid} (orders-worker-7) exclusive`,
    );

    const watch = await cli('watch', '--url', server.url, '--count', '1', '--json');
    expect(watch.code).toBe(0);
    expect(JSON.parse(watch.stdout).locks).toEqual([
      expect.objectContaining({ key: 'orders:42', held: true }),
    ]);
    const table = await cli('watch', '--url', server.url, '--count', '1');
    expect(table.stdout).toContain(`${process.pid} (orders-worker-7)`);

    const text = await cli('list', '--url', server.url);
    expect(text.stdout.split('\n')).toContain('orders:42');

    const unconfirmed = await cli('release', 'orders:42', '--url', server.url);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('--yes');

    const release = await cli('release', 'orders:42', '--url', server.url, '--yes', '--json');
    expect(release.code).toBe(0);
    expect(JSON.parse(release.stdout)).toEqual({ key: 'orders:42', released: true });

    const after = await cli('list', '--url', server.url, '--json');
    expect(after.code).toBe(1);
    expect(JSON.parse(after.stdout).keys).toEqual([]);
    // Released on the server: another process gets it now.
    const next = await engine().tryAcquire('orders:42', { ttl: 30_000 });
    expect(next).not.toBeNull();
    await next?.release();
    await held.release().catch(() => undefined); // its holder learns of the loss at its renewal
  }, 60_000);
});

describe('nestjs-distributed-lock CLI exit codes', () => {
  it('2 for a usage error, 3 for a backend that cannot be reached', async () => {
    const usage = await cli('frobnicate', '--url', 'redis://127.0.0.1:6379');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('unknown command "frobnicate"');
    const down = await cli('list', '--url', 'redis://127.0.0.1:1', '--json');
    expect(down.code).toBe(3);
    expect(down.stderr).toContain('ECONNREFUSED');
  }, 30_000);
});
