import { execFileSync, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { reason, type BenchContext, type Skipped } from './bench.context';
import { procCpuMs, rotation } from './bench.stats';
import { cannon, startApp } from './decorator.scenario';

/**
 * The HTTP layer: what the module costs a Nest Express app (the Nest installed: 12 on main), each
 * app in its own process and the load generator (autocannon, 10 connections, a new id per request)
 * in this one. Rows alternate within each run (the order rotates), and the run is repeated: the
 * bare app without the module, the module's lock-free route, @Locked on memory, @Locked on Redis,
 * and a route that makes the lock's two Redis round trips itself (SET NX PX + a compare-and-delete
 * script) without the module. The whole table is made once per runtime: the Node running the bench
 * and the pinned Node 24 of scripts/node.sh 24 (started from Node 20, the bench shows both).
 */
export type HttpLayerRowName = 'bare' | 'module' | 'lockedMemory' | 'lockedRedis' | 'manualRedis';

export interface HttpLayerResult {
  /** The Node.js that ran the apps, e.g. `Node 24.22.3`. */
  runtime: string;
  connections: number;
  seconds: number;
  runs: number;
  loadAverage: { start: number[]; end: number[] };
  /** req/s of each row, one value per run. */
  rows: Partial<Record<HttpLayerRowName, number[]>>;
  /**
   * CPU µs the app process spent per request of each row, one value per run (from /proc, 10 ms
   * resolution): unlike req/s, it hardly moves when other processes share the cores.
   */
  cpuUs: Partial<Record<HttpLayerRowName, number[]>>;
  skipped: Skipped[];
}

const CONNECTIONS = 10;

const ROWS: { name: HttpLayerRowName; app: 'bare' | 'memory' | 'redis'; route: string }[] = [
  { name: 'bare', app: 'bare', route: 'plain' },
  { name: 'module', app: 'memory', route: 'plain' },
  { name: 'lockedMemory', app: 'memory', route: 'locked' },
  { name: 'lockedRedis', app: 'redis', route: 'locked' },
  { name: 'manualRedis', app: 'bare', route: 'manual' },
];

/** The Node of this process, then the pinned Node 24 when this is another version. */
function runtimes(): { runtime: string; node: string }[] {
  const here = { runtime: `Node ${process.versions.node}`, node: process.execPath };
  if (process.versions.node.startsWith('24.')) return [here];
  const bin = execFileSync('bash', [join(__dirname, '../../scripts/node.sh'), '24'], {
    encoding: 'utf8',
  }).trim();
  const node = join(bin, 'node');
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().slice(1);
  return [here, { runtime: `Node ${version}`, node }];
}

export async function runHttpLayer(ctx: BenchContext): Promise<HttpLayerResult[]> {
  const results: HttpLayerResult[] = [];
  for (const { runtime, node } of runtimes()) {
    ctx.log(`http layer on ${runtime}`);
    results.push(await runOn(ctx, runtime, node));
  }
  return results;
}

async function runOn(ctx: BenchContext, runtime: string, node: string): Promise<HttpLayerResult> {
  const runs = ctx.quick ? 1 : 3;
  const seconds = ctx.quick ? 1 : 5;
  // A server runs its routes for hours: warm each row until V8 has optimised its path (a 1 s
  // warm-up left the longer lock path partly unoptimised in the first run).
  const warmUp = ctx.quick ? 1 : 5;
  const result: HttpLayerResult = {
    runtime,
    connections: CONNECTIONS,
    seconds,
    runs,
    loadAverage: { start: loadavg().map((l) => Number(l.toFixed(2))), end: [] },
    rows: {},
    cpuUs: {},
    skipped: [],
  };
  const apps = new Map<string, { child: ChildProcess; port: number }>();
  try {
    if (ctx.systems.includes('redis')) await ctx.servers.need('redis');
    const port = ctx.servers.redis ? String(ctx.servers.redis.port) : undefined;
    apps.set('bare', await startApp(port ? ['bare', port] : ['bare'], node));
    apps.set('memory', await startApp(['memory'], node));
    if (port) apps.set('redis', await startApp(['redis', port], node));
    const rows = ROWS.filter((r) => apps.has(r.app) && (r.route !== 'manual' || port));
    for (const row of rows) await cannon(apps.get(row.app)!.port, row.route, warmUp, CONNECTIONS);
    for (let run = 0; run < runs; run++) {
      for (const row of rotation(rows, run)) {
        const app = apps.get(row.app)!;
        const cpu0 = procCpuMs(app.child.pid);
        const rps = await cannon(app.port, row.route, seconds, CONNECTIONS);
        const cpuMs = procCpuMs(app.child.pid) - cpu0;
        (result.rows[row.name] ??= []).push(rps);
        (result.cpuUs[row.name] ??= []).push((cpuMs * 1000) / (rps * seconds));
      }
      ctx.log(`http layer run ${run + 1}: req/s ${JSON.stringify(lastOf(result.rows))}`);
    }
  } catch (error) {
    result.skipped.push({ system: apps.has('redis') ? 'memory' : 'redis', reason: reason(error) });
  } finally {
    for (const app of apps.values()) app.child.kill('SIGKILL');
  }
  result.loadAverage.end = loadavg().map((l) => Number(l.toFixed(2)));
  return result;
}

function lastOf(rows: HttpLayerResult['rows']): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, values] of Object.entries(rows)) out[name] = Math.round(values.at(-1)!);
  return out;
}

const LABELS: Record<HttpLayerRowName, [string, HttpLayerRowName | undefined]> = {
  bare: ['bare app, plain route (no module)', undefined],
  module: ['module, lock-free route', 'bare'],
  lockedMemory: ['`@Locked` on memory', 'bare'],
  lockedRedis: ['`@Locked` on Redis', 'manualRedis'],
  manualRedis: ['SET NX PX + compare-and-delete by hand (no module)', 'bare'],
};

/** The runtimes side by side (medians and ratios), then one table per runtime with every run. */
export function httpLayerSection(results: HttpLayerResult[]): string {
  return (results.length > 1 ? sideBySide(results) : '') + results.map(httpLayerTable).join('');
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

/** The median req/s of each route on each runtime, and its ratio to the row it is judged against. */
function sideBySide(results: HttpLayerResult[]): string {
  const lines = [
    '',
    `## HTTP layer, runtimes side by side (median req/s of ${results[0].runs} runs)`,
    '',
    `| route | ${results.map((r) => `${r.runtime} req/s | ÷`).join(' | ')} |`,
    `| :---- | ${results.map(() => '-----: | :-').join(' | ')} |`,
  ];
  for (const [name, [label, against]] of Object.entries(LABELS) as [
    HttpLayerRowName,
    [string, HttpLayerRowName | undefined],
  ][]) {
    const cells = results.map((r) => {
      const values = r.rows[name];
      if (!values) return '— | ';
      const base = against && r.rows[against];
      const ratio = base ? `${(median(values) / median(base)).toFixed(2)}× ${against}` : '';
      return `${median(values).toFixed(0)} | ${ratio}`;
    });
    lines.push(`| ${label} | ${cells.join(' | ')} |`);
  }
  return `${lines.join('\n')}\n`;
}

/** The table: req/s per run, their median, and the median's ratio to the row it is judged against. */
function httpLayerTable(r: HttpLayerResult): string {
  const lines = [
    '',
    `## HTTP layer on ${r.runtime} (${r.runs} runs, ${r.connections} connections, ${r.seconds} s per row, load ${r.loadAverage.start[0]} → ${r.loadAverage.end[0]})`,
    '',
    '| route | req/s per run | median | ÷ | app CPU µs/request per run | median | ÷ |',
    '| :---- | ------------: | -----: | :- | -------------------------: | -----: | :- |',
  ];
  for (const [name, [label, against]] of Object.entries(LABELS) as [
    HttpLayerRowName,
    [string, HttpLayerRowName | undefined],
  ][]) {
    const values = r.rows[name];
    if (!values) continue;
    const base = against && r.rows[against];
    const ratio = base ? `${(median(values) / median(base)).toFixed(2)}× ${against}` : '';
    const cpu = r.cpuUs[name] ?? [];
    const cpuBase = against && r.cpuUs[against];
    const cpuRatio = cpuBase ? `${(median(cpu) / median(cpuBase)).toFixed(2)}× ${against}` : '';
    lines.push(
      `| ${label} | ${values.map((v) => v.toFixed(0)).join(', ')} | ${median(values).toFixed(0)} | ${ratio} | ${cpu.map((v) => v.toFixed(0)).join(', ')} | ${cpu.length ? median(cpu).toFixed(0) : ''} | ${cpuRatio} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
