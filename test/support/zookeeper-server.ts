import { writeFileSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { freePort, freePorts, removeDir, ServerProcess, tempDir } from './server-process';

/**
 * Private ZooKeeper servers from Debian's `zookeeper` package (jars under /usr/share/java), run
 * with java directly on free loopback ports in temp dirs: a standalone server or a 3-server
 * ensemble. Admin server off, 4lw commands on (ruok, srvr, ...). tickTime 100 ms so session
 * timeouts of a few hundred ms are negotiable (min 2 ticks, max as configured).
 */
const JARS = ['/usr/share/java/zookeeper.jar', '/usr/share/java/slf4j-nop.jar'].join(':');
const TICK_MS = 100;

export interface ZooKeeperServerOptions {
  /** Largest session timeout the server grants (ms). Default 10 s. */
  maxSessionTimeout?: number;
  /** Smallest session timeout the server grants (ms). Default 2 ticks = 200 ms. */
  minSessionTimeout?: number;
}

function javaArgs(cfg: string): string[] {
  return [
    '-Xmx160m',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-Dzookeeper.admin.enableServer=false',
    '-Dzookeeper.4lw.commands.whitelist=*',
    '-Djava.net.preferIPv4Stack=true',
    '-cp',
    JARS,
    'org.apache.zookeeper.server.quorum.QuorumPeerMain',
    cfg,
  ];
}

function config(
  dataDir: string,
  clientPort: number,
  o: ZooKeeperServerOptions,
  extra: string[] = [],
): string {
  return [
    `tickTime=${TICK_MS}`,
    `dataDir=${dataDir}`,
    `clientPort=${clientPort}`,
    'clientPortAddress=127.0.0.1',
    'admin.enableServer=false',
    '4lw.commands.whitelist=*',
    `minSessionTimeout=${o.minSessionTimeout ?? 2 * TICK_MS}`,
    `maxSessionTimeout=${o.maxSessionTimeout ?? 10_000}`,
    'maxClientCnxns=0',
    'initLimit=50',
    'syncLimit=10',
    ...extra,
    '',
  ].join('\n');
}

/** Sends a four-letter-word command (ruok, srvr, stat, cons, ...) and resolves the reply ('' if none). */
export function fourLetter(port: number, command: string, timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const sock = connect({ port, host: '127.0.0.1' });
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    sock.on('connect', () => sock.write(command));
    sock.on('data', (d) => (out += d.toString()));
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

/** Resolves once the server answers `srvr` with a Mode (standalone, leader or follower), i.e. serves requests. */
async function untilServing(port: number, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (/Mode: /.test(await fourLetter(port, 'srvr'))) return;
    if (Date.now() > until)
      throw new Error(`ZooKeeper on ${port} is not serving after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export class ZooKeeperServer extends ServerProcess {
  static async start(options: ZooKeeperServerOptions = {}): Promise<ZooKeeperServer> {
    const dir = tempDir('zk');
    const port = await freePort();
    const data = join(dir, 'data');
    mkdirSync(data);
    const cfg = join(dir, 'zoo.cfg');
    writeFileSync(cfg, config(data, port, options));
    const server = new ZooKeeperServer(
      {
        name: `zookeeper-${port}`,
        command: 'java',
        args: javaArgs(cfg),
        port,
        ready: () => untilServing(port),
      },
      dir,
    );
    await server.start();
    return server;
  }

  get connectionString(): string {
    return `127.0.0.1:${this.port}`;
  }

  async destroy(): Promise<void> {
    await this.kill();
    removeDir(this.dir);
  }
}

/** A 3-server ensemble on loopback (client, quorum and election ports all free ports). */
export class ZooKeeperEnsemble {
  private constructor(
    readonly servers: ServerProcess[],
    readonly dir: string,
  ) {}

  static async start(size = 3, options: ZooKeeperServerOptions = {}): Promise<ZooKeeperEnsemble> {
    const dir = tempDir('zk-ensemble');
    const ports = await freePorts(size * 3);
    const peers = Array.from(
      { length: size },
      (_, i) => `server.${i + 1}=127.0.0.1:${ports[size + 2 * i]}:${ports[size + 2 * i + 1]}`,
    );
    const servers = Array.from({ length: size }, (_, i) => {
      const data = join(dir, `data-${i + 1}`);
      mkdirSync(data);
      writeFileSync(join(data, 'myid'), `${i + 1}\n`);
      const cfg = join(dir, `zoo-${i + 1}.cfg`);
      writeFileSync(cfg, config(data, ports[i], options, peers));
      return new ServerProcess(
        {
          name: `zookeeper-${i + 1}-${ports[i]}`,
          command: 'java',
          args: javaArgs(cfg),
          port: ports[i],
        },
        dir,
      );
    });
    // Start all before waiting for any: a member only serves once a quorum has elected a leader.
    await Promise.all(servers.map((s) => s.start()));
    await Promise.all(servers.map((s) => untilServing(s.port)));
    return new ZooKeeperEnsemble(servers, dir);
  }

  get connectionString(): string {
    return this.servers.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  get ports(): number[] {
    return this.servers.map((s) => s.port);
  }

  /** Index of the current leader (asks every running member's srvr). */
  async leader(): Promise<number> {
    for (let i = 0; i < this.servers.length; i++) {
      if (
        this.servers[i].running &&
        /Mode: leader/.test(await fourLetter(this.servers[i].port, 'srvr'))
      )
        return i;
    }
    return -1;
  }

  async untilServing(index: number): Promise<void> {
    await untilServing(this.servers[index].port);
  }

  async destroy(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.kill()));
    removeDir(this.dir);
  }
}

export interface ZkDriver {
  createClient(
    connectionString: string,
    options?: { sessionTimeout?: number; spinDelay?: number; retries?: number },
  ): ZooKeeperClientLike;
}

/** The driver, loaded by the tests (the library itself never loads it). It ships no typings. */
export const zookeeperDriver: ZkDriver = require('node-zookeeper-client');

/** A new, not yet connected client (what a backend's clientFactory returns). spinDelay 100 ms: fast reconnects in tests. */
export function newZkClient(connectionString: string, sessionTimeout: number): ZooKeeperClientLike {
  return zookeeperDriver.createClient(connectionString, { sessionTimeout, spinDelay: 100 });
}

/** A connected client for test bookkeeping (listing nodes, deleting behind a holder's back). */
export async function connectedZkClient(
  connectionString: string,
  sessionTimeout = 5_000,
): Promise<ZooKeeperClientLike> {
  const c = newZkClient(connectionString, sessionTimeout);
  await new Promise<void>((resolve) => {
    const on = (s: { code: number }) => {
      if (s.code === 3) {
        c.removeListener('state', on);
        resolve();
      }
    };
    c.on('state', on);
    c.connect();
  });
  return c;
}
