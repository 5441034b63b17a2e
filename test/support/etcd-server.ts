import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually } from './eventually';
import { freePorts, removeDir, ServerProcess, tempDir } from './server-process';

const run = promisify(execFile);

/**
 * Private etcd servers (Debian's etcd-server 3.4) on free loopback ports, each in its own temp
 * dir: a single node or a 3-member cluster, with fault injection (kill, SIGSTOP/SIGCONT, restart
 * on the same ports and data dirs) and `etcdctl` (Debian's etcd-client) pointed at them.
 * Heartbeat 100 ms / election 1 s are etcd's defaults: the smallest lease TTL is then 2 s.
 */
export class EtcdCluster {
  private constructor(
    readonly members: EtcdMember[],
    readonly dir: string,
  ) {}

  /** Starts `size` members (1 = a single node) and waits until the cluster serves writes. */
  static async start(size = 1): Promise<EtcdCluster> {
    const dir = tempDir(`etcd${size}`);
    const ports = await freePorts(size * 2);
    const names = Array.from({ length: size }, (_, i) => `m${i}`);
    const initial = names.map((n, i) => `${n}=http://127.0.0.1:${ports[2 * i + 1]}`).join(',');
    const members = names.map(
      (name, i) =>
        new EtcdMember(name, ports[2 * i], ports[2 * i + 1], initial, `ndl-${ports[0]}`, dir),
    );
    const cluster = new EtcdCluster(members, dir);
    try {
      await Promise.all(members.map((m) => m.start()));
      await cluster.waitHealthy();
    } catch (error) {
      await cluster.destroy();
      throw error;
    }
    return cluster;
  }

  /** Client URLs (`http://127.0.0.1:port`) of every member, or of the given ones. */
  hosts(members: EtcdMember[] = this.members): string[] {
    return members.map((m) => m.url);
  }

  /** Runs etcdctl (API v3) against the running members; resolves its stdout. */
  async etcdctl(...args: string[]): Promise<string> {
    const endpoints = this.members
      .filter((m) => m.running)
      .map((m) => m.url)
      .join(',');
    const { stdout } = await run(
      'etcdctl',
      [`--endpoints=${endpoints}`, '--dial-timeout=2s', '--command-timeout=5s', ...args],
      {
        env: { ...process.env, ETCDCTL_API: '3' },
      },
    );
    return stdout;
  }

  /** The member that currently leads (asked of every running member; they must agree). */
  async leader(): Promise<EtcdMember> {
    return eventually(
      async () => {
        const out = await this.etcdctl('endpoint', 'status', '-w', 'json');
        // Member ids exceed 2^53: quote them before JSON.parse so they stay exact.
        const status = JSON.parse(
          out.replace(/"(member_id|leader|cluster_id)":(\d+)/g, '"$1":"$2"'),
        ) as {
          Endpoint: string;
          Status: { header: { member_id: number | string }; leader: number | string };
        }[];
        const leaders = new Set(status.map((s) => String(s.Status.leader)));
        if (leaders.size !== 1) return undefined;
        const id = [...leaders][0];
        const own = status.find((s) => String(s.Status.header.member_id) === id);
        return own ? this.members.find((m) => m.url === own.Endpoint) : undefined;
      },
      20_000,
      100,
    ) as Promise<EtcdMember>;
  }

  /** Resolves once a write through etcdctl succeeds (a leader exists and a quorum answers). */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    await eventually(
      async () => {
        await this.etcdctl('put', '__health', String(Date.now()));
        return true;
      },
      timeoutMs,
      100,
    );
  }

  /** SIGKILLs every member (an outage); start() brings them back on the same ports and data. */
  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.kill()));
  }

  async restart(): Promise<void> {
    await Promise.all(this.members.filter((m) => !m.running).map((m) => m.start()));
    await this.waitHealthy();
  }

  async destroy(): Promise<void> {
    await Promise.all(this.members.map((m) => m.kill()));
    removeDir(this.dir);
  }
}

/** One etcd member: client port, peer port, its own data dir under the cluster's temp dir. */
export class EtcdMember extends ServerProcess {
  constructor(
    readonly memberName: string,
    clientPort: number,
    readonly peerPort: number,
    initialCluster: string,
    token: string,
    dir: string,
  ) {
    super(
      {
        name: `etcd-${memberName}-${clientPort}`,
        command: 'etcd',
        args: [
          '--name',
          memberName,
          '--data-dir',
          join(dir, memberName),
          '--listen-client-urls',
          `http://127.0.0.1:${clientPort}`,
          '--advertise-client-urls',
          `http://127.0.0.1:${clientPort}`,
          '--listen-peer-urls',
          `http://127.0.0.1:${peerPort}`,
          '--initial-advertise-peer-urls',
          `http://127.0.0.1:${peerPort}`,
          '--initial-cluster',
          initialCluster,
          '--initial-cluster-state',
          'new',
          '--initial-cluster-token',
          token,
          '--heartbeat-interval',
          '100',
          '--election-timeout',
          '1000',
          '--logger',
          'zap',
          '--log-level',
          'warn',
        ],
        port: clientPort,
        startTimeoutMs: 30_000,
      },
      dir,
    );
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
}
