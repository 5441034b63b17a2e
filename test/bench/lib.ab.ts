import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server';
import { redisClient } from './bench.contenders';
import { percentile } from './bench.stats';

/**
 * Block A/B of two (or more) lib trees, for comparing an old engine with a new one (not a test;
 * nothing asserts a time). Each row is one tree; the rows take turns every BLOCK operations (about
 * 10 ms for a cycle), so every row shares every drift of the machine's speed, and the row that
 * leads rotates. Cases:
 *   redis    the uncontended Redis cycle: acquire + release of a new key on one connection
 *   memory   the uncontended memory cycle, in this process
 *   handoff  the contended Redis handoff: WORKERS engines (one connection each) on one key in this
 *            process, each holding HOLD_MS and pausing PAUSE_MS between turns
 *   semaphore  the uncontended Redis semaphore cycle: acquire + release of a permit of one key
 *            (permits: 3) on one connection
 *   redlock  the uncontended Redlock cycle over three masters (its own redis-servers)
 * Each tree is loaded through its own `index` (its public API: LockEngine, MemoryLockBackend,
 * RedisLockBackend, RedlockBackend), so it has its own module graph. A tree must live under the
 * project so its imports resolve node_modules, e.g.
 * `git archive <commit> lib | tar -x -C .tmp/old`:
 *
 *   LIB=.tmp/old/lib [CASES=redis,memory,handoff] [SECS=20] [BLOCK=100] [WORKERS=8] \
 *     npx ts-node --transpile-only test/bench/lib.ab.ts
 *
 * LIB=<dir> compares ./lib with <dir>; LIBS=a,b,c lists the trees instead. Prints per case and
 * row: µs per operation, the rate ÷ the first row's, and CPU µs per operation in this process and
 * (Redis cases) in redis-server, from /proc (10 ms ticks: exact only summed over many blocks).
 */
interface Handle {
  release(): Promise<void>;
}
interface Engine {
  acquire(key: string, options?: { permits: number }): Promise<Handle>;
  close(): Promise<void>;
}
interface Tree {
  LockEngine: new (options: object) => Engine;
  MemoryLockBackend: new () => object;
  RedisLockBackend: new (options: { client: Redis }) => object;
  RedlockBackend: new (options: { clients: Redis[] }) => object;
}
/** One row of one case: runs about `n` operations and says how many it ran. */
interface Row {
  name: string;
  run(n: number): Promise<number>;
  close(): Promise<void>;
  waits?: number[];
}

const SECS = Number(process.env.SECS ?? 20);
const BLOCK = Number(process.env.BLOCK ?? 100);
const WORKERS = Number(process.env.WORKERS ?? 8);
const HOLD_MS = Number(process.env.HOLD_MS ?? 1);
const PAUSE_MS = Number(process.env.PAUSE_MS ?? 2);
const engineOptions = (backend: object) => ({
  backend,
  keyPrefix: 'ab:',
  defaults: { ttl: 10_000, wait: 10_000 },
});
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
let serial = 0;

function cycleRow(
  name: string,
  engine: Engine,
  close: () => Promise<void>,
  permits?: { permits: number },
): Row {
  const key = `semaphore:${name}`;
  return {
    name,
    async run(n) {
      for (let i = 0; i < n; i++)
        await (await engine.acquire(permits ? key : `cycle:${serial++}`, permits)).release();
      return n;
    },
    close,
  };
}

/** WORKERS engines take turns on one key until `n` grants were made; waits are kept per grant. */
function handoffRow(name: string, tree: Tree, port: number): Row {
  const clients = Array.from({ length: WORKERS }, () => redisClient(port));
  const engines = clients.map(
    (client) => new tree.LockEngine(engineOptions(new tree.RedisLockBackend({ client }))),
  );
  const key = `handoff:${name}`;
  const row: Row = {
    name,
    waits: [],
    async run(n) {
      let grants = 0;
      const worker = async (engine: Engine) => {
        while (grants < n) {
          const t = performance.now();
          const handle = await engine.acquire(key);
          row.waits!.push(performance.now() - t);
          grants++;
          await delay(HOLD_MS);
          await handle.release();
          await delay(PAUSE_MS);
        }
      };
      await Promise.all(engines.map(worker));
      return grants; // workers already waiting when the n-th grant came finish their turn
    },
    async close() {
      await Promise.all(engines.map((e) => e.close()));
      clients.forEach((c) => c.disconnect());
    },
  };
  return row;
}

function rowsFor(kind: string, trees: [string, Tree][], ports: number[]): Row[] {
  const port = ports[0];
  return trees.map(([dir, tree], i) => {
    const name = `${i}: ${dir}`;
    if (kind === 'redlock') {
      const clients = ports.map((p) => redisClient(p));
      const engine = new tree.LockEngine(engineOptions(new tree.RedlockBackend({ clients })));
      return cycleRow(name, engine, async () => {
        await engine.close();
        clients.forEach((c) => c.disconnect());
      });
    }
    if (kind === 'memory')
      return cycleRow(name, new tree.LockEngine(engineOptions(new tree.MemoryLockBackend())), () =>
        Promise.resolve(),
      );
    if (kind === 'handoff') return handoffRow(name, tree, port);
    const client = redisClient(port);
    const engine = new tree.LockEngine(engineOptions(new tree.RedisLockBackend({ client })));
    const close = async () => {
      await engine.close();
      client.disconnect();
    };
    return cycleRow(name, engine, close, kind === 'semaphore' ? { permits: 3 } : undefined);
  });
}

/** CPU µs used so far by process `pid` (Linux /proc; 0 where there is none). */
function cpuOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime + stime, 100 ticks/s
  } catch {
    return 0;
  }
}

async function measure(kind: string, rows: Row[], serverPids: number[]): Promise<void> {
  const serverCpu = () => serverPids.reduce((sum, pid) => sum + cpuOf(pid), 0);
  const block = kind === 'handoff' ? Math.max(10, Math.round(BLOCK / 5)) : BLOCK;
  const stats = rows.map(() => ({ ms: 0, ops: 0, cpu: 0, server: 0 }));
  for (const r of rows) await r.run(block * 20); // warm: V8 optimises each row's code
  for (const r of rows) r.waits?.splice(0);
  const end = performance.now() + SECS * 1_000;
  for (let turn = 0; performance.now() < end; turn++) {
    for (let k = 0; k < rows.length; k++) {
      const j = (k + turn) % rows.length; // each row leads in turn
      const s0 = serverCpu();
      const c0 = process.cpuUsage();
      const t = performance.now();
      const ops = await rows[j].run(block);
      stats[j].ms += performance.now() - t;
      const used = process.cpuUsage(c0);
      stats[j].cpu += used.user + used.system;
      stats[j].server += serverCpu() - s0;
      stats[j].ops += ops;
    }
  }
  const us = stats.map((s) => (s.ms * 1_000) / s.ops);
  console.log(`\n${kind}: ${SECS} s, blocks of ${block} operations`);
  rows.forEach((r, j) => {
    const s = stats[j];
    const p99 = r.waits
      ? `, p99 wait ${percentile(
          [...r.waits].sort((a, b) => a - b),
          99,
        ).toFixed(2)} ms`
      : '';
    console.log(
      `  ${r.name.padEnd(36)} ${us[j].toFixed(2)} µs/op (${(1e6 / us[j]).toFixed(0)}/s), rate ÷ row 0 ` +
        `${(us[0] / us[j]).toFixed(3)}; CPU µs/op: this process ${(s.cpu / s.ops).toFixed(1)}` +
        `${kind === 'memory' ? '' : `, redis-server ${(s.server / s.ops).toFixed(1)}`}${p99}`,
    );
  });
}

async function main(): Promise<void> {
  const dirs = process.env.LIBS?.split(',') ?? [
    'lib',
    ...(process.env.LIB ? [process.env.LIB] : []),
  ];
  const kinds = (process.env.CASES ?? 'redis,memory,handoff').split(',');
  for (const k of kinds)
    if (!['redis', 'memory', 'handoff', 'semaphore', 'redlock'].includes(k))
      throw new Error(`unknown case "${k}" (redis, memory, handoff, semaphore, redlock)`);
  const trees = dirs.map((d) => [d, require(resolve(d, 'index')) as Tree] as [string, Tree]);
  const server = kinds.some((k) => k !== 'memory' && k !== 'redlock')
    ? await RedisServer.start()
    : undefined;
  const masters = kinds.includes('redlock')
    ? await Promise.all([0, 1, 2].map(() => RedisServer.start()))
    : [];
  try {
    for (const kind of kinds) {
      const servers = kind === 'redlock' ? masters : server ? [server] : [];
      const rows = rowsFor(
        kind,
        trees,
        servers.map((x) => x.port),
      );
      try {
        await measure(
          kind,
          rows,
          servers.flatMap((x) => (x.child?.pid === undefined ? [] : [x.child.pid])),
        );
      } finally {
        await Promise.all(rows.map((r) => r.close()));
      }
    }
  } finally {
    await Promise.all([server, ...masters].map((x) => x?.destroy()));
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
