import { readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeCharts } from './bench.chart';
import type { ContendedResult } from './contended.scenario';
import type { DecoratorResult } from './decorator.scenario';
import type { ScalingResult } from './scaling.scenario';
import type { UncontendedResult } from './uncontended.scenario';
import type { WatchdogResult } from './watchdog.scenario';
import type { Skipped } from './bench.context';
import { fmtMs, fmtNum, fmtRatio, mdTable } from './bench.stats';

/** Everything one run produced: written as JSON, rendered as Markdown by renderReport. */
export interface BenchResults {
  name: string;
  quick: boolean;
  /** Where the contended scenarios ran their clients. */
  contendedClients?: string;
  startedAt: string;
  durationSeconds: number;
  machine: {
    cpu: string;
    memoryGb: number;
    node: string;
    platform: string;
    loadAverageAtStart: number[];
    loadAverageAtEnd: number[];
    servers: Record<string, string>;
    packages: Record<string, string>;
  };
  uncontended?: UncontendedResult;
  contended?: ContendedResult;
  decorator?: DecoratorResult;
  watchdog?: WatchdogResult;
  scaling?: ScalingResult;
}

export function renderReport(r: BenchResults, charts: string[]): string {
  const m = r.machine;
  const out: string[] = [
    `# Benchmark run \`${r.name}\`${r.quick ? ' (quick smoke run: short windows, not for publishing)' : ''}`,
    '',
    `Started ${r.startedAt}, took ${r.durationSeconds} s. Machine: ${m.cpu}, ${m.memoryGb} GB, ${m.platform}, Node ${m.node}; ` +
      `load average ${m.loadAverageAtStart.join(' / ')} at start, ${m.loadAverageAtEnd.join(' / ')} at end. ` +
      `Servers (private, loopback): ${
        Object.entries(m.servers)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none'
      }. ` +
      `Packages: ${Object.entries(m.packages)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.`,
    '',
  ];
  if (r.uncontended) out.push(uncontendedSection(r.uncontended));
  if (r.contended) out.push(contendedSection(r.contended, r.contendedClients));
  if (r.decorator) out.push(decoratorSection(r.decorator));
  if (r.watchdog) out.push(watchdogSection(r.watchdog));
  if (r.scaling) out.push(scalingSection(r.scaling, charts, r.contendedClients));
  return `${out.join('\n')}\n`;
}

export function uncontendedSection(u: UncontendedResult): string {
  const rows = u.rows.map((x) => [
    x.system,
    x.ours ? `**${x.contender}**` : x.contender,
    fmtNum(x.opsPerSec),
    fmtMs(x.latency.median),
    fmtMs(x.latency.p99),
    fmtNum(x.clientCpuUs),
    Number.isNaN(x.serverCpuUs) ? '—' : fmtNum(x.serverCpuUs),
    x.ours ? '—' : fmtRatio(x.oursRatio),
  ]);
  return [
    '## 1. Uncontended cycle (acquire + release of a new key, one connection)',
    '',
    `${u.rounds} alternating rounds of ${u.roundMs} ms per contender after a warm-up; latency of one full cycle in ms. ` +
      'CPU µs per cycle: in the benchmark process (the library + driver) and in the server process(es), from /proc (10 ms ticks, summed over all rounds).',
    '',
    mdTable(
      [
        'system',
        'contender',
        'cycles/s',
        'median ms',
        'p99 ms',
        'client CPU µs/cycle',
        'server CPU µs/cycle',
        'ours ÷ this (cycles/s)',
      ],
      rows,
    ),
    skippedNote(u.skipped),
  ].join('\n');
}

export function contendedSection(c: ContendedResult, where = 'in-process'): string {
  const rows = c.rows.map((x) => [
    x.system,
    x.ours ? `**${x.contender}**` : x.contender,
    fmtNum(x.handoffsPerSec),
    fmtMs(x.wait.median),
    fmtMs(x.wait.p99),
    fmtMs(x.longestWait),
    String(x.giveUps),
    String(x.overlaps),
    fmtNum(x.minShare, 2),
    x.ours ? '—' : fmtRatio(x.handoffRatio),
    x.ours ? '—' : fmtRatio(x.p99Ratio),
    x.waits,
  ]);
  return [
    '',
    `## 2. Contended handoff (${c.workers} workers, one key, hold ${c.holdMs} ms, pause ${c.pauseMs} ms)`,
    '',
    `${c.rounds} alternating window(s) of ${c.windowMs / 1000} s per contender, each after an unmeasured warm-up window. Clients: ${where} ` +
      "(memory: always in-process). Wait = from a worker's first attempt to its grant. " +
      '"gave up" = the library stopped waiting and the worker asked again; "overlaps" = moments two workers held the key (must be 0); ' +
      '"least-served share" = grants of the worker served least ÷ the mean per worker, worst window (1 = even, 0 = a worker starved).',
    '',
    mdTable(
      [
        'system',
        'contender',
        'handoffs/s',
        'p50 wait ms',
        'p99 wait ms',
        'longest ms',
        'gave up',
        'overlaps',
        'least-served share',
        'ours ÷ this (handoffs/s)',
        'this ÷ ours (p99 wait)',
        'how it waits',
      ],
      rows,
    ),
    skippedNote(c.skipped),
  ].join('\n');
}

export function decoratorSection(d: DecoratorResult): string {
  const rows = d.rows.map((x) => [
    x.backend,
    fmtMs(x.plain.median),
    fmtMs(x.locked.median),
    fmtMs(x.addedMedianMs),
    fmtMs(x.plain.p99),
    fmtMs(x.locked.p99),
    fmtNum(x.plainCpuUs),
    fmtNum(x.lockedCpuUs),
    x.pingCpuUs === undefined ? '—' : fmtNum(x.pingCpuUs),
    fmtNum(x.plainReqPerSec),
    fmtNum(x.lockedReqPerSec),
    x.redisRttMs === undefined ? '—' : fmtMs(x.redisRttMs),
    x.addedByOneRoundTripMs === undefined ? '—' : fmtMs(x.addedByOneRoundTripMs),
    x.redisRoundTripsPerRequest === undefined ? '—' : fmtNum(x.redisRoundTripsPerRequest, 2),
  ]);
  return [
    '',
    '## 3. @Locked overhead over HTTP (Express, a new key per request)',
    '',
    `Latency: one keep-alive connection, sequential requests, ${d.rounds} alternating rounds of ${d.roundMs} ms per route. ` +
      `Throughput: autocannon, ${d.connections} connections, ${d.autocannonSeconds} s per route in two alternating runs. The app runs in its own process. ` +
      'On Redis a third route makes one PING round trip and takes no lock: its added median is what one round trip costs as the app sees it.',
    '',
    mdTable(
      [
        'backend',
        'plain median ms',
        '@Locked median ms',
        'added median ms',
        'plain p99 ms',
        '@Locked p99 ms',
        'app CPU µs/req plain',
        'app CPU µs/req @Locked',
        'app CPU µs/req 1-PING route',
        'plain req/s',
        '@Locked req/s',
        'Redis PING ms (bench process)',
        'added by a 1-PING route ms',
        'Redis round trips / request',
      ],
      rows,
    ),
    skippedNote(d.skipped),
  ].join('\n');
}

export function watchdogSection(w: WatchdogResult): string {
  const rows = w.rows.map((x) => [
    fmtNum(x.locks),
    `${fmtNum(x.ttlMs)} (renew every ${fmtNum(x.ttlMs / 3)})`,
    fmtNum(x.acquireSeconds, 1),
    fmtNum(x.ticksPerPeriod, 1),
    fmtNum(x.batchesPerTick, 1),
    fmtNum(x.pipelinesPerBatch, 2),
    fmtNum(x.commandsPerPipeline),
    fmtNum(x.renewalsPerSec),
    fmtNum(x.cpuPercentOfCore, 2),
    fmtNum(x.cpuPer1kRenewalsPerSec, 2),
    fmtNum(x.heapBytesPerLock),
    fmtNum(x.redisBytesPerLock),
    String(x.lost),
  ]);
  return [
    '',
    '## 4. Watchdog at scale (locks held at once by one process, Redis, renewal on)',
    '',
    'Measured over two renewal periods after every lock has been renewed once. A tick = the renew() batches the watchdog issues in one timer callback ' +
      '(at most 5,000 locks per batch); each batch is one pipeline, and the batches of a tick are written back to back on the one connection. ' +
      'Heap per lock includes the LockHandle the caller keeps; Redis bytes per lock is used_memory growth.',
    '',
    mdTable(
      [
        'locks',
        'ttl ms',
        'acquire all s',
        'ticks / period',
        'batches / tick',
        'pipelines / batch',
        'renewals / pipeline',
        'renewals/s',
        'CPU % of a core',
        'CPU % per 1k renewals/s',
        'heap B / lock',
        'Redis B / lock',
        'lost',
      ],
      rows,
    ),
  ].join('\n');
}

export function scalingSection(s: ScalingResult, charts: string[], where = 'in-process'): string {
  const counts = [...new Set(s.series.flatMap((x) => x.points.map((p) => p.workers)))].sort(
    (a, b) => a - b,
  );
  const rows = s.series.map((x) => [
    x.ours ? `**${x.contender}**` : x.contender,
    ...counts.map((n) => {
      const p = x.points.find((q) => q.workers === n);
      return p
        ? `${fmtNum(p.handoffsPerSec)} / ${fmtMs(p.p99Wait)} / ${fmtNum(p.minShare, 2)}`
        : 'n/a';
    }),
  ]);
  return [
    '',
    '## 5. Scaling curve (contended loop of scenario 2, 1–32 workers)',
    '',
    `One ${s.windowMs / 1000} s window per point (after a warm-up). Clients: ${where}, spread evenly (16 workers = 2 per process). ` +
      'Cells: handoffs/s / p99 wait ms / least-served share. ' +
      'With 1 worker the loop itself (hold 1 ms + pause 2 ms, as setTimeout grants them) bounds the rate at about 250/s.',
    '',
    mdTable(['contender', ...counts.map((n) => `${n} workers`)], rows),
    '',
    ...charts.map((c) => `![${c}](${c})`),
    skippedNote(s.skipped),
  ].join('\n');
}

function skippedNote(skipped: Skipped[]): string {
  return skipped.length
    ? `\nNot measured: ${skipped.map((s) => `${s.system} (${s.reason})`).join('; ')}.\n`
    : '';
}

/** Re-renders a committed run's Markdown and charts from its JSON: `ts-node test/bench/bench.report.ts <results.json>`. */
if (require.main === module) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: bench.report.ts <results.json>');
  const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  const charts = writeCharts(results, dirname(file), results.name);
  // The semaphore section, as run.ts appends it (loaded only here: it pulls in the contenders).
  const semaphore = (results as { semaphore?: unknown }).semaphore;
  const tail = semaphore
    ? (require('./semaphore.scenario') as typeof import('./semaphore.scenario')).semaphoreSection(
        semaphore as import('./semaphore.scenario').SemaphoreResult,
      )
    : '';
  writeFileSync(file.replace(/\.json$/, '.md'), renderReport(results, charts) + tail);
}
