import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { procCpuMs } from './bench.stats';
import { EtcdCluster } from '../support/etcd-server';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';
import { RedisServer } from '../support/redis-server';
import { ZooKeeperServer } from '../support/zookeeper-server';

/**
 * The private servers one benchmark run uses: started on free loopback ports in temp dirs by the
 * test harness (never the machine's own services), shared by every contender of a scenario so that
 * ours and the competitors run against the very same processes. Started lazily, stopped at the end.
 */
export type System = 'memory' | 'redis' | 'redlock' | 'etcd' | 'zookeeper' | 'mysql' | 'postgres';

interface Stoppable {
  destroy(): Promise<void>;
}

/** Serializable addresses of the run's servers (sent to worker processes). */
export interface Endpoints {
  redis?: number;
  redlock?: number[];
  etcd?: string[];
  zookeeper?: string;
  mysql?: MariaDbServer['connection'];
  postgres?: PostgresServer['connection'];
}

export class BenchServers {
  redis?: RedisServer;
  /** Three independent masters for Redlock (ours and the redlock package). */
  redlock?: RedisServer[];
  etcd?: EtcdCluster;
  zookeeper?: ZooKeeperServer;
  mysql?: MariaDbServer;
  postgres?: PostgresServer;
  private readonly starting = new Map<System, Promise<void>>();
  readonly versions: Record<string, string> = {};

  /** Starts the servers `system` needs (once); rejects with the reason when it cannot. */
  need(system: System): Promise<void> {
    let p = this.starting.get(system);
    if (!p) {
      p = this.start(system);
      this.starting.set(system, p);
    }
    return p;
  }

  private async start(system: System): Promise<void> {
    switch (system) {
      case 'memory':
        return;
      case 'redis':
        this.redis = await RedisServer.start();
        this.versions.redis =
          this.redis.cli('info', 'server').match(/redis_version:(\S+)/)?.[1] ?? '?';
        return;
      case 'redlock':
        this.redlock = await Promise.all([0, 1, 2].map(() => RedisServer.start()));
        return;
      case 'etcd':
        this.etcd = await EtcdCluster.start(1);
        this.versions.etcd = firstLine(() =>
          execFileSync('etcd', ['--version'], { encoding: 'utf8' }),
        ).replace('etcd Version: ', '');
        return;
      case 'zookeeper':
        this.zookeeper = await ZooKeeperServer.start();
        this.versions.zookeeper = '3.8.0 (Debian zookeeper package, OpenJDK 17)';
        return;
      case 'mysql':
        this.mysql = await MariaDbServer.start();
        this.versions.mariadb = firstLine(() =>
          execFileSync('mariadbd', ['--version'], { encoding: 'utf8' }),
        );
        return;
      case 'postgres':
        this.postgres = await PostgresServer.start();
        this.versions.postgres = firstLine(() =>
          execFileSync('postgres', ['--version'], { encoding: 'utf8' }),
        );
        return;
    }
  }

  /** Where the started servers listen: what a worker process needs to connect to them. */
  endpoints(): Endpoints {
    return {
      redis: this.redis?.port,
      redlock: this.redlock?.map((s) => s.port),
      etcd: this.etcd?.hosts(),
      zookeeper: this.zookeeper?.connectionString,
      mysql: this.mysql?.connection,
      postgres: this.postgres?.connection,
    };
  }

  /** A BenchServers over servers another process started (a worker's view): it starts nothing. */
  static attached(e: Endpoints): BenchServers {
    const s = new BenchServers();
    const stub = <T>(value: object): T => value as unknown as T;
    if (e.redis !== undefined) s.redis = stub({ port: e.redis });
    if (e.redlock) s.redlock = e.redlock.map((port) => stub({ port }));
    if (e.etcd) s.etcd = stub({ hosts: () => e.etcd });
    if (e.zookeeper) s.zookeeper = stub({ connectionString: e.zookeeper });
    if (e.mysql) s.mysql = stub({ connection: e.mysql });
    if (e.postgres) s.postgres = stub({ connection: e.postgres });
    for (const system of [
      'memory',
      'redis',
      'redlock',
      'etcd',
      'zookeeper',
      'mysql',
      'postgres',
    ] as const) {
      s.starting.set(system, Promise.resolve());
    }
    return s;
  }

  /**
   * CPU ms the servers of `system` have used so far (all threads; for PostgreSQL the postmaster's
   * children, where the per-connection backends do the work). NaN for memory.
   */
  cpuMs(system: System): number {
    const pids: (number | undefined)[] = [];
    if (system === 'redis') pids.push(this.redis?.child?.pid);
    if (system === 'redlock') pids.push(...(this.redlock ?? []).map((s) => s.child?.pid));
    if (system === 'etcd') pids.push(...(this.etcd?.members ?? []).map((m) => m.child?.pid));
    if (system === 'zookeeper') pids.push(this.zookeeper?.child?.pid);
    if (system === 'mysql') pids.push(this.mysql?.child?.pid);
    if (system === 'postgres' && this.postgres?.child?.pid)
      pids.push(this.postgres.child.pid, ...childrenOf(this.postgres.child.pid));
    if (pids.length === 0) return NaN;
    return pids.reduce<number>((sum, pid) => sum + procCpuMs(pid), 0);
  }

  async destroy(): Promise<void> {
    const all: (Stoppable | undefined)[] = [
      this.redis,
      ...(this.redlock ?? []),
      this.etcd,
      this.zookeeper,
      this.mysql,
      this.postgres,
    ];
    await Promise.all(all.map((s) => s?.destroy().catch(() => undefined)));
  }
}

/** Pids whose parent is `ppid` (from /proc). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid)
        out.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

function firstLine(fn: () => string): string {
  try {
    return fn().split('\n')[0].trim();
  } catch {
    return '?';
  }
}
