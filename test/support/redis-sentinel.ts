import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from './eventually';
import { freePorts, removeDir, ServerProcess, tempDir } from './server-process';
import { TcpProxy } from './tcp-proxy';

/**
 * A private Redis Sentinel deployment on loopback: two data nodes (one primary, one replica) and
 * three sentinels (quorum 2). The replica replicates through a TcpProxy (`link`), so a test can
 * delay or cut the replication stream alone (clients and sentinels talk to the nodes directly).
 * Failovers are started on demand (failover()). Sentinel has its own ideas about the replica, and
 * the harness keeps out of their way or undoes them:
 * - A replica that follows another address than the primary's (here: the link) is "fixed" (REPLICAOF
 *   <primary's real address>) once that has lasted failover-timeout; ours (10 min) outlasts any run.
 * - After a switch, a sentinel reconnects to the new primary at most once a second, and counts the
 *   time to its first answer against down-after: with 1 s, a live, just-promoted primary was often
 *   seen down (+sdown, +odown) and failed over by the sentinels themselves as soon as the restarted
 *   replica was good, and the old primary, still alive, was then pointed straight at the new one
 *   (+convert-to-slave), past the link. The 5 s down-after leaves room for that first answer (our
 *   failovers are forced: they never wait for down-after).
 * - Should Sentinel still move the replica (a loaded machine), settled() notices that the replica
 *   no longer replicates through the link from the current primary and points it back through a
 *   link to that primary, once no failover is running.
 * Roles move with failovers: ask primary()/replica(), never assume. No persistence: a restarted
 * node comes back empty, as a replica of the current primary.
 */
export const SENTINEL_MASTER_NAME = 'mymaster';

export class RedisSentinelGroup {
  private constructor(
    readonly nodes: ServerProcess[],
    readonly sentinels: ServerProcess[],
    readonly dir: string,
    /** The replication link: replica -> proxy -> primary. Replaced when the roles change. */
    public link: TcpProxy,
  ) {}

  static async start(options: { downAfter?: number } = {}): Promise<RedisSentinelGroup> {
    const dir = tempDir('redis-sentinel');
    const [p0, p1, ...sentinelPorts] = await freePorts(5);
    const node = (port: number, replicaOf?: number) => {
      const nodeDir = join(dir, `node-${port}`);
      mkdirSync(nodeDir, { recursive: true });
      return new ServerProcess(
        {
          name: `redis-node-${port}`,
          command: 'redis-server',
          // No 5 s diskless-sync delay: a restarted replica is back in sync at once.
          args: [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--save',
            '',
            '--appendonly',
            'no',
            '--dir',
            nodeDir,
            '--repl-diskless-sync-delay',
            '0',
            '--enable-debug-command',
            'yes',
            ...(replicaOf ? ['--replicaof', '127.0.0.1', String(replicaOf)] : []),
          ],
          port,
        },
        dir,
      );
    };
    const nodes = [node(p0)];
    await nodes[0].start();
    const link = await TcpProxy.start({ port: p0 });
    nodes.push(node(p1, link.port));
    await nodes[1].start();
    const sentinels = sentinelPorts.map((port) => {
      const conf = join(dir, `sentinel-${port}.conf`);
      // Sentinel rewrites its config file (discovered replicas and sentinels, epochs): it must be writable.
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${p0} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${options.downAfter ?? 5000}`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 600000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      return new ServerProcess(
        {
          name: `redis-sentinel-${port}`,
          command: 'redis-server',
          args: [conf, '--sentinel'],
          port,
        },
        dir,
      );
    });
    await Promise.all(sentinels.map((s) => s.start()));
    const group = new RedisSentinelGroup(nodes, sentinels, dir, link);
    await group.settled();
    return group;
  }

  get sentinelAddresses(): { host: string; port: number }[] {
    return this.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  cli(port: number, ...args: string[]): string {
    return execFileSync('redis-cli', ['-p', String(port), ...args], {
      encoding: 'utf8',
      timeout: 5_000,
    }).trim();
  }

  /** The port `sentinel` names as primary (NaN if it cannot answer). */
  primaryPortSeenBy(sentinel: ServerProcess): number {
    try {
      return Number(
        this.cli(sentinel.port, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER_NAME).split(
          '\n',
        )[1],
      );
    } catch {
      return Number.NaN;
    }
  }

  /** The port every live sentinel names as primary, or undefined while they disagree or cannot answer. */
  agreedPrimaryPort(): number | undefined {
    const answers = this.sentinels.filter((s) => s.running).map((s) => this.primaryPortSeenBy(s));
    return answers.length > 0 && answers.every((p) => p === answers[0]) && !Number.isNaN(answers[0])
      ? answers[0]
      : undefined;
  }

  primary(): ServerProcess {
    const port = this.agreedPrimaryPort();
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`the sentinels do not agree on a primary (${port})`);
    return node;
  }

  replica(): ServerProcess {
    const primary = this.primary();
    return this.nodes.find((n) => n !== primary) as ServerProcess;
  }

  /** Whether any live sentinel is running a failover of the primary (its own or one we asked for). */
  failoverInProgress(): boolean {
    return this.sentinels
      .filter((s) => s.running)
      .some((s) => {
        try {
          return /failover_in_progress/.test(
            this.cli(s.port, 'SENTINEL', 'MASTER', SENTINEL_MASTER_NAME),
          );
        } catch {
          return true; // cannot tell: do not touch the nodes
        }
      });
  }

  /**
   * Resolves once the sentinels agree on a live primary and run no failover, the replica is online
   * and replicates through the link from that primary, every sentinel knows the replica up, and the
   * sentinels know each other. A replica that Sentinel pointed elsewhere (see the class comment) is
   * pointed back through a link to the primary, once per move (a sentinel that keeps moving it shows
   * in the error).
   */
  async settled(timeoutMs = 45_000): Promise<void> {
    let why = '';
    let relinked = 0;
    const not = (reason: string) => {
      why = reason;
      return false;
    };
    await eventually(
      async () => {
        const port = this.agreedPrimaryPort();
        const primary = this.nodes.find((n) => n.port === port && n.running);
        const replica = this.nodes.find((n) => n !== primary);
        if (!primary || !replica?.running)
          return not(`no agreed live primary (sentinels say ${port})`);
        if (this.failoverInProgress()) return not('a failover is in progress');
        if (!/role:master/.test(this.cli(primary.port, 'INFO', 'replication')))
          return not(`${primary.port} is not a master yet`);
        const info = this.cli(replica.port, 'INFO', 'replication');
        const oneLine = info.replace(/\r?\n/g, ' ').slice(0, 200);
        if (
          !/role:slave/.test(info) ||
          !new RegExp(`^master_port:${this.link.port}\\r?$`, 'm').test(info) ||
          this.link.target.port !== primary.port
        ) {
          // Sentinel moved it (or the link leads to a former primary): put the link back in the path.
          await this.relink(replica, primary);
          relinked++;
          return not(
            `replica ${replica.port} did not replicate through the link from ${primary.port} (${oneLine}); pointed it back`,
          );
        }
        if (!/master_link_status:up/.test(info))
          return not(`replica ${replica.port} not in sync through the link: ${oneLine}`);
        for (const s of this.sentinels) {
          const replicas = this.cli(s.port, 'SENTINEL', 'replicas', SENTINEL_MASTER_NAME);
          if (!replicas.includes(String(replica.port)) || /s_down|disconnected/.test(replicas))
            return not(
              `sentinel ${s.port} does not see replica ${replica.port} up: ${replicas.replace(/\n/g, ' ').slice(0, 200)}`,
            );
          const peers = this.cli(s.port, 'SENTINEL', 'sentinels', SENTINEL_MASTER_NAME)
            .split('\n')
            .filter((l) => l === 'name').length;
          if (peers !== this.sentinels.length - 1)
            return not(`sentinel ${s.port} knows ${peers} peers`);
        }
        return true;
      },
      timeoutMs,
      100,
    ).catch(() => {
      throw new Error(
        `the Sentinel deployment did not settle within ${timeoutMs} ms: ${why} (replica pointed back through the link ${relinked} time(s))`,
      );
    });
  }

  /** Makes `replica` replicate from `primary` through the link (a new link if it led elsewhere). */
  private async relink(replica: ServerProcess, primary: ServerProcess): Promise<void> {
    if (this.link.target.port !== primary.port) await this.replaceLink(primary);
    this.cli(replica.port, 'REPLICAOF', '127.0.0.1', String(this.link.port));
  }

  /** Closes the link and opens a new one to `primary` (a restarted or re-pointed replica uses it). */
  private async replaceLink(primary: ServerProcess): Promise<void> {
    await this.link.close();
    this.link = await TcpProxy.start({ port: primary.port });
  }

  /**
   * Asks a sentinel to fail over now (SENTINEL FAILOVER, again every second while nothing changed:
   * it answers INPROG or NOGOODSLAVE while one of their own attempts runs or aborts), until the
   * sentinels agree on a new primary that says it is one. Asked only while that sentinel still names
   * the old primary: once it has switched, the others follow, and asking again would fail over the
   * new one.
   */
  async failover(timeoutMs = 30_000): Promise<ServerProcess> {
    const from = this.primary().port;
    let last = '';
    let askedAt = 0;
    const node = await eventually(
      () => {
        const now = this.agreedPrimaryPort();
        if (now !== undefined && now !== from) {
          const found = this.nodes.find((n) => n.port === now);
          return found && /role:master/.test(this.cli(found.port, 'INFO', 'replication'))
            ? found
            : undefined;
        }
        if (Date.now() - askedAt >= 1_000 && this.primaryPortSeenBy(this.sentinels[0]) === from) {
          askedAt = Date.now();
          try {
            last = this.cli(this.sentinels[0].port, 'SENTINEL', 'FAILOVER', SENTINEL_MASTER_NAME);
          } catch (error) {
            last = String((error as { stdout?: string }).stdout ?? error);
          }
        }
        return undefined;
      },
      timeoutMs,
      50,
    ).catch(() => {
      throw new Error(
        `no failover from port ${from} within ${timeoutMs} ms; the sentinel last said: ${last}`,
      );
    });
    return node as ServerProcess;
  }

  /** Waits until the sentinels agree that `port` is no longer the primary (a failover happened). */
  async failedOverFrom(port: number, timeoutMs = 30_000): Promise<ServerProcess> {
    const node = await eventually(
      () => {
        const now = this.agreedPrimaryPort();
        const found = now === port ? undefined : this.nodes.find((n) => n.port === now);
        return found && /role:master/.test(this.cli(found.port, 'INFO', 'replication'))
          ? found
          : undefined;
      },
      timeoutMs,
      50,
    );
    return node as ServerProcess;
  }

  /** Starts a stopped node again, empty, as a replica of the current primary through a new link proxy. */
  async restartAsReplica(node: ServerProcess): Promise<void> {
    await this.replaceLink(this.primary());
    const args = node.options.args;
    const at = args.indexOf('--replicaof');
    if (at >= 0) args.splice(at, 3);
    args.push('--replicaof', '127.0.0.1', String(this.link.port));
    await node.start();
  }

  async destroy(): Promise<void> {
    await this.link.close();
    await Promise.all([...this.sentinels, ...this.nodes].map((p) => p.kill()));
    removeDir(this.dir);
  }
}
