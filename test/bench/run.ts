import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { BenchServers, type System } from './bench.servers';
import { ALL_SYSTEMS, type BenchContext } from './bench.context';
import { runUncontended } from './uncontended.scenario';
import { runContended } from './contended.scenario';
import { runDecorator } from './decorator.scenario';
import { runWatchdog } from './watchdog.scenario';
import { runScaling } from './scaling.scenario';
import { runSemaphore, semaphoreSection, type SemaphoreResult } from './semaphore.scenario';
import { httpLayerSection, runHttpLayer, type HttpLayerResult } from './http-layer.scenario';
import { fencingTable, runFencing, type FencingRow } from './fencing.scenario';
import { ceilingSection, runCeiling, type CeilingResult } from './ceiling.scenario';
import { renderReport, type BenchResults } from './bench.report';
import { writeCharts } from './bench.chart';
import { WorkerPool } from './bench.workers';
import { reportMain } from './bench.record';

/** Worker processes for the contended scenarios: 8 application instances. */
const WORKER_PROCESSES = 8;

/**
 * `npm run bench [-- --quick] [--scenarios=uncontended,contended,decorator,watchdog,scaling,semaphore,http-layer,fencing,ceiling]
 * [--systems=memory,redis,...] [--in-process] [--out=name]`: starts private servers, runs the
 * scenarios (ours and the competitors alternating, in this one process, against the same servers),
 * writes test/bench/results/<name>.json, .md and <name>-*.svg (git ignores all but the record).
 * `npm run bench -- --report [--check]`: no servers; regenerates the record's tables in
 * docs/benchmarks.md and its charts in docs/bench/ from test/bench/results/record.json.
 * Nothing asserts a time.
 */
const SCENARIOS = [
  'uncontended',
  'contended',
  'decorator',
  'watchdog',
  'scaling',
  'semaphore',
  'http-layer',
  'fencing',
  'ceiling',
] as const;
type Scenario = (typeof SCENARIOS)[number];
const KNOWN_FLAGS = ['--quick', '--scenarios', '--systems', '--in-process', '--out', '--report'];

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--report')) {
    process.exitCode = await reportMain(args);
    return;
  }
  const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const unknown = args.filter((a) => !KNOWN_FLAGS.some((f) => a === f || a.startsWith(`${f}=`)));
  if (unknown.length > 0)
    throw new Error(`unknown argument(s) ${unknown.join(' ')} (known: ${KNOWN_FLAGS.join(' ')})`);
  const quick = args.includes('--quick');
  const scenarios = (flag('scenarios')?.split(',') ?? [...SCENARIOS]) as Scenario[];
  const systems = (flag('systems')?.split(',') ?? ALL_SYSTEMS) as System[];
  for (const s of scenarios)
    if (!SCENARIOS.includes(s))
      throw new Error(`unknown scenario "${s}" (one of ${SCENARIOS.join(', ')})`);
  for (const s of systems)
    if (!ALL_SYSTEMS.includes(s))
      throw new Error(`unknown system "${s}" (one of ${ALL_SYSTEMS.join(', ')})`);
  const name = flag('out') ?? (quick ? 'bench-quick' : 'bench-full');

  const servers = new BenchServers();
  let pool: Promise<WorkerPool> | undefined;
  const startedAt = new Date();
  const t0 = performance.now();
  const ctx: BenchContext = {
    servers,
    quick,
    systems,
    log: (line) =>
      console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}`),
    workerPool: () => (pool ??= WorkerPool.start(WORKER_PROCESSES)),
    inProcess: args.includes('--in-process'),
  };
  const results: BenchResults = {
    name,
    quick,
    contendedClients: ctx.inProcess ? 'in-process' : `${WORKER_PROCESSES} worker processes`,
    startedAt: startedAt.toISOString(),
    durationSeconds: 0,
    machine: {
      cpu: `${cpus().length} × ${cpus()[0]?.model ?? '?'}`,
      memoryGb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      loadAverageAtStart: loadavg().map((l) => Number(l.toFixed(2))),
      loadAverageAtEnd: [],
      servers: servers.versions,
      packages: packageVersions(),
    },
  };
  // A smoke run starts the worker processes while the first scenarios run (it has a time budget);
  // a full run starts them when first needed, so their start-up does not disturb a measurement.
  if (quick && !ctx.inProcess && (scenarios.includes('contended') || scenarios.includes('scaling')))
    ctx.workerPool().catch(() => undefined);
  try {
    // Start every server the run needs at once, before any measurement.
    await Promise.all(
      systems.map((s) =>
        servers
          .need(s)
          .catch((error) => ctx.log(`${s}: cannot start its server: ${(error as Error).message}`)),
      ),
    );
    for (const scenario of scenarios) {
      ctx.log(`--- ${scenario}`);
      if (scenario === 'uncontended') results.uncontended = await runUncontended(ctx);
      if (scenario === 'contended') results.contended = await runContended(ctx);
      if (scenario === 'decorator') results.decorator = await runDecorator(ctx);
      if (scenario === 'watchdog') results.watchdog = await runWatchdog(ctx);
      if (scenario === 'scaling') results.scaling = await runScaling(ctx);
      if (scenario === 'semaphore') Object.assign(results, { semaphore: await runSemaphore(ctx) });
      if (scenario === 'http-layer') Object.assign(results, { httpLayer: await runHttpLayer(ctx) });
      if (scenario === 'fencing') Object.assign(results, { fencing: await runFencing() });
      if (scenario === 'ceiling') Object.assign(results, { ceiling: await runCeiling(ctx) });
    }
  } finally {
    await (await pool?.catch(() => undefined))?.stop();
    await servers.destroy();
  }
  results.durationSeconds = Math.round((performance.now() - t0) / 1000);
  results.machine.loadAverageAtEnd = loadavg().map((l) => Number(l.toFixed(2)));

  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  const charts = writeCharts(results, dir, name);
  const semaphore = (results as { semaphore?: SemaphoreResult }).semaphore;
  const httpLayer = (results as { httpLayer?: HttpLayerResult[] }).httpLayer;
  const fencing = (results as { fencing?: FencingRow[] }).fencing;
  const ceiling = (results as { ceiling?: CeilingResult }).ceiling;
  const report =
    renderReport(results, charts) +
    (semaphore ? semaphoreSection(semaphore) : '') +
    (httpLayer ? httpLayerSection(httpLayer) : '') +
    (fencing ? `\n## Fenced writes\n\n${fencingTable(fencing)}\n` : '') +
    (ceiling ? ceilingSection(ceiling) : '');
  writeFileSync(join(dir, `${name}.md`), report);
  ctx.log(
    `done in ${results.durationSeconds} s: test/bench/results/${name}.json, .md; charts: ${charts.join(', ') || 'none'}`,
  );
}

function packageVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of [
    'ioredis',
    'redlock',
    'redis-semaphore',
    'etcd3',
    'node-zookeeper-client',
    'mysql2',
    'pg',
    'autocannon',
    '@nestjs/core',
  ]) {
    try {
      out[p] = (require(`${p}/package.json`) as { version: string }).version;
    } catch {
      out[p] = '?';
    }
  }
  return out;
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
