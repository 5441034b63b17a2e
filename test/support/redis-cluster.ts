import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from './eventually';
import { clusterPorts, removeDir, ServerProcess, tempDir } from './server-process';

/**
 * A private Redis Cluster with replicas on loopback: `masters` primaries and one replica each
 * (default 3 + 3), made with `redis-cli --cluster create --cluster-replicas 1`. Fault tests kill or
 * pause a primary (ServerProcess.kill / pause) and wait for its replica's promotion
 * (`promotedFrom`). cluster-node-timeout is 2 s, so a dead primary is failed over in about 3-5 s.
 * Roles move with failovers: ask `primaryOfKey` / `replicaOf`, never assume. No persistence: a
 * restarted node comes back empty and is re-added as a replica (`restartAsReplica`).
 */
export class RedisClusterGroup {
  /** Nodes a test paused (SIGSTOP). */
  private readonly paused = new Set<ServerProcess>();

  private constructor(
    readonly nodes: ServerProcess[],
    readonly dir: string,
  ) {}

  static readonly NODE_TIMEOUT_MS = 2_000;

  static async start(masters = 3): Promise<RedisClusterGroup> {
    const dir = tempDir('redis-cluster-ha');
    const [ports, busPorts] = await clusterPorts(masters * 2);
    const nodes = ports.map((port, i) => node(dir, port, busPorts[i]));
    await Promise.all(nodes.map((n) => n.start()));
    execFileSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { encoding: 'utf8' },
    );
    const group = new RedisClusterGroup(nodes, dir);
    await group.settled();
    return group;
  }

  /** The seed addresses a Cluster client starts from. */
  get addresses(): { host: string; port: number }[] {
    return this.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  }

  /** One redis-cli command (2 s at most: a paused node never answers). */
  cli(port: number, ...args: string[]): string {
    return execFileSync('redis-cli', ['-p', String(port), ...args], {
      encoding: 'utf8',
      timeout: 2_000,
    }).trim();
  }

  /** GET `key` on a replica (READONLY and GET on one connection): what it has replicated. */
  readOnReplica(port: number, key: string): string {
    const out = execFileSync('redis-cli', ['-p', String(port)], {
      encoding: 'utf8',
      timeout: 2_000,
      input: `READONLY\nGET ${key}\n`,
    });
    return out.trim().split('\n').slice(1).join('\n');
  }

  /** SIGSTOP: the node stalls (a long GC, a frozen VM); never asked anything while paused. */
  pause(n: ServerProcess): void {
    this.paused.add(n);
    n.pause();
  }

  resume(n: ServerProcess): void {
    n.resume();
    this.paused.delete(n);
  }

  /** Every live node's view: `cluster_state:ok`, every slot served, every replica linked. */
  async settled(timeoutMs = 30_000): Promise<void> {
    await eventually(
      () => {
        const live = this.nodes.filter((n) => n.running && !this.paused.has(n));
        // Every node's view knows every live replica as one (gossip takes a moment after a change).
        const replicas = live.filter((n) => this.cli(n.port, 'ROLE').startsWith('slave')).length;
        const views = live.map(
          (n) =>
            this.cli(n.port, 'CLUSTER', 'NODES')
              .split('\n')
              .filter((l) => / (myself,)?slave /.test(l) && !l.includes('fail')).length,
        );
        if (views.some((seen) => seen !== replicas)) return false;
        return live.every((n) => {
          try {
            const info = this.cli(n.port, 'CLUSTER', 'INFO');
            if (!info.includes('cluster_state:ok')) return false;
            if (!info.includes('cluster_slots_ok:16384')) return false;
            const role = this.cli(n.port, 'ROLE').split('\n');
            // Every live node serves slots or is a replica connected to its primary (just after
            // create, a future replica is briefly a master without slots).
            if (role[0] === 'slave') return role[3] === 'connected';
            const me = this.cli(n.port, 'CLUSTER', 'NODES')
              .split('\n')
              .find((l) => l.includes('myself'));
            return (me?.split(' ').length ?? 0) > 8;
          } catch {
            return false;
          }
        });
      },
      timeoutMs,
      100,
    );
  }

  /** The port of the primary that serves `key`'s slot now (asked of a live node). */
  primaryOfKey(key: string): number {
    const slot = Number(this.cli(this.anyLive().port, 'CLUSTER', 'KEYSLOT', key));
    return this.primaryOfSlot(slot);
  }

  primaryOfSlot(slot: number): number {
    return this.slotOwners()(slot);
  }

  /** slot -> port of the primary serving it, from one CLUSTER NODES. */
  slotOwners(): (slot: number) => number {
    const ranges: [number, number, number][] = [];
    for (const line of this.cli(this.anyLive().port, 'CLUSTER', 'NODES').split('\n')) {
      const f = line.split(' ');
      if (!f[2]?.includes('master') || f[2].includes('fail')) continue;
      const port = Number(f[1].split(':')[1].split('@')[0]);
      for (const range of f.slice(8)) {
        if (range.startsWith('[')) continue; // a slot being migrated
        const [a, b = a] = range.split('-').map(Number);
        ranges.push([a, b, port]);
      }
    }
    return (slot) => {
      const hit = ranges.find(([a, b]) => slot >= a && slot <= b);
      if (!hit) throw new Error(`no primary serves slot ${slot}`);
      return hit[2];
    };
  }

  /** The node (process) listening on `port`. */
  byPort(port: number): ServerProcess {
    const n = this.nodes.find((x) => x.port === port);
    if (!n) throw new Error(`no cluster node on port ${port}`);
    return n;
  }

  /** The replica of the primary on `primaryPort` (the node that would be promoted). */
  replicaOf(primaryPort: number): ServerProcess {
    const nodes = this.cli(this.anyLive().port, 'CLUSTER', 'NODES').split('\n');
    const id = nodes.find((l) => l.includes(`:${primaryPort}@`))?.split(' ')[0];
    const line = nodes.find((l) => l.split(' ')[3] === id && l.split(' ')[2].includes('slave'));
    if (!line) throw new Error(`no replica of ${primaryPort}`);
    return this.byPort(Number(line.split(' ')[1].split(':')[1].split('@')[0]));
  }

  /** Resolves once a node other than `port` serves `slotKey`'s slot as primary. */
  async promotedFrom(port: number, slotKey: string, timeoutMs = 30_000): Promise<number> {
    let now = port;
    await eventually(
      () => {
        try {
          now = this.primaryOfKey(slotKey);
          return now !== port && this.cli(now, 'ROLE').startsWith('master');
        } catch {
          return false;
        }
      },
      timeoutMs,
      50,
    );
    return now;
  }

  /**
   * Moves `slot` from the primary on `from` to the one on `to` the way `redis-cli --cluster
   * reshard` does, slowly: opens the migration (openMigration), then moves one key per MIGRATE
   * with `stepMs` between (keys created meanwhile are moved too) until `from` has none left and at
   * least `minMs` have passed, then closes it. While the slot is open, commands on it get ASK or
   * TRYAGAIN redirects. Resolves with the keys moved.
   */
  async migrateSlot(
    slot: number,
    from: number,
    to: number,
    { stepMs = 300, minMs = 0 } = {},
  ): Promise<string[]> {
    const migration = this.openMigration(slot, from, to);
    const started = performance.now();
    const moved: string[] = [];
    for (;;) {
      const [key] = migration.moveKeys(1);
      if (key) moved.push(key);
      else if (performance.now() - started >= minMs) break;
      await new Promise((r) => setTimeout(r, stepMs));
    }
    migration.close();
    return moved;
  }

  /**
   * Opens the migration of `slot` from `from` to `to` (SETSLOT IMPORTING on `to`, MIGRATING on
   * `from`). `moveKeys(n)` MIGRATEs up to `n` of the keys `from` still has (answering them);
   * `close()` gives the slot to `to` (SETSLOT NODE on every live primary, `to` first).
   */
  openMigration(slot: number, from: number, to: number) {
    const fromId = this.cli(from, 'CLUSTER', 'MYID');
    const toId = this.cli(to, 'CLUSTER', 'MYID');
    this.cli(to, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId);
    this.cli(from, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId);
    return {
      moveKeys: (n: number): string[] => {
        const keys = this.cli(from, 'CLUSTER', 'GETKEYSINSLOT', String(slot), String(n))
          .split('\n')
          .filter(Boolean);
        if (keys.length > 0)
          this.cli(from, 'MIGRATE', '127.0.0.1', String(to), '', '0', '5000', 'KEYS', ...keys);
        return keys;
      },
      close: (): void => {
        const primaries = this.nodes.filter(
          (n) => n.running && !this.paused.has(n) && this.cli(n.port, 'ROLE').startsWith('master'),
        );
        for (const n of [this.byPort(to), ...primaries.filter((p) => p.port !== to)])
          this.cli(n.port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
      },
    };
  }

  /**
   * Restarts a dead (or stopped) old primary as an empty node and makes it a replica of
   * `primaryPort`, then waits until the cluster is settled again.
   */
  async restartAsReplica(n: ServerProcess, primaryPort: number): Promise<void> {
    if (n.running) await n.kill();
    removeDir(join(this.dir, `node-${n.port}`));
    mkdirSync(join(this.dir, `node-${n.port}`), { recursive: true });
    await n.start();
    const live = this.anyLive(n.port).port;
    // Forget the dead node's old identity everywhere, then MEET the new one and attach it.
    const oldIds = this.cli(live, 'CLUSTER', 'NODES')
      .split('\n')
      .filter((l) => l.includes(`:${n.port}@`) && l.includes('fail'))
      .map((l) => l.split(' ')[0]);
    for (const other of this.nodes.filter((x) => x.running && x !== n))
      for (const id of oldIds) {
        try {
          this.cli(other.port, 'CLUSTER', 'FORGET', id);
        } catch {
          // already forgotten
        }
      }
    this.cli(n.port, 'CLUSTER', 'MEET', '127.0.0.1', String(primaryPort));
    const primaryId = this.cli(primaryPort, 'CLUSTER', 'MYID');
    await eventually(() => this.cli(n.port, 'CLUSTER', 'NODES').includes(primaryId), 10_000, 50);
    await eventually(
      () => {
        try {
          return this.cli(n.port, 'CLUSTER', 'REPLICATE', primaryId) === 'OK';
        } catch {
          return false;
        }
      },
      10_000,
      100,
    );
    await this.settled();
  }

  async destroy(): Promise<void> {
    // kill() resumes a paused node first.
    await Promise.all(this.nodes.map((n) => n.kill()));
    removeDir(this.dir);
  }

  private anyLive(except?: number): ServerProcess {
    const n = this.nodes.find((x) => x.running && x.port !== except && !this.paused.has(x));
    if (!n) throw new Error('no live cluster node');
    return n;
  }
}

function node(dir: string, port: number, busPort: number): ServerProcess {
  const nodeDir = join(dir, `node-${port}`);
  mkdirSync(nodeDir, { recursive: true });
  return new ServerProcess(
    {
      name: `redis-cluster-ha-${port}`,
      command: 'redis-server',
      args: [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(busPort),
        '--cluster-config-file',
        join(nodeDir, 'nodes.conf'),
        '--cluster-node-timeout',
        String(RedisClusterGroup.NODE_TIMEOUT_MS),
        // A replica whose primary just died may be promoted however long it was cut off.
        '--cluster-replica-validity-factor',
        '0',
        '--repl-diskless-sync-delay',
        '0',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        nodeDir,
      ],
      port,
    },
    dir,
  );
}
