import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { clusterPorts, freePort, removeDir, ServerProcess, tempDir } from './server-process';

/** A private redis-server on a free loopback port (no persistence), with fault injection. */
export class RedisServer extends ServerProcess {
  static async start(extraArgs: string[] = []): Promise<RedisServer> {
    const dir = tempDir('redis');
    const port = await freePort();
    const server = new RedisServer(
      {
        name: `redis-${port}`,
        command: 'redis-server',
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
          dir,
          ...extraArgs,
        ],
        port,
      },
      dir,
    );
    await server.start();
    return server;
  }

  cli(...args: string[]): string {
    return execFileSync('redis-cli', ['-p', String(this.port), ...args], {
      encoding: 'utf8',
    }).trim();
  }

  async destroy(): Promise<void> {
    await this.kill();
    removeDir(this.dir);
  }
}

/** A private 3-master Redis Cluster (no replicas) on loopback, created with redis-cli --cluster create. */
export class RedisClusterServers {
  private constructor(
    readonly nodes: ServerProcess[],
    readonly dir: string,
  ) {}

  static async start(masters = 3): Promise<RedisClusterServers> {
    const dir = tempDir('redis-cluster');
    const [ports, busPorts] = await clusterPorts(masters);
    const nodes = ports.map(
      (port, i) =>
        new ServerProcess(
          {
            name: `redis-cluster-${port}`,
            command: 'redis-server',
            args: [
              '--port',
              String(port),
              '--bind',
              '127.0.0.1',
              '--cluster-enabled',
              'yes',
              '--cluster-port',
              String(busPorts[i]),
              '--cluster-config-file',
              join(dir, `nodes-${port}.conf`),
              '--cluster-node-timeout',
              '2000',
              '--save',
              '',
              '--appendonly',
              'no',
              '--dir',
              dir,
            ],
            port,
          },
          dir,
        ),
    );
    await Promise.all(nodes.map((n) => n.start()));
    execFileSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { encoding: 'utf8' },
    );
    const until = Date.now() + 20_000;
    for (;;) {
      const info = execFileSync('redis-cli', ['-p', String(ports[0]), 'cluster', 'info'], {
        encoding: 'utf8',
      });
      if (info.includes('cluster_state:ok')) break;
      if (Date.now() > until) throw new Error(`redis cluster did not converge:\n${info}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return new RedisClusterServers(nodes, dir);
  }

  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }

  async destroy(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    removeDir(this.dir);
  }
}
