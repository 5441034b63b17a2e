import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as prettier from 'prettier';
import { writeCharts } from './bench.chart';
import type { BenchResults } from './bench.report';
import type { SemaphoreResult } from './semaphore.scenario';
import { fmtMs, fmtNum, fmtRatio, mdTable } from './bench.stats';

/**
 * The run of record: `test/bench/results/record.json` is the one committed results file, and the
 * tables between the `bench:record` markers of docs/benchmarks.md, the `bench:summary` table of
 * README.md and the charts the page links (docs/bench/record-*.svg) are generated from it, never
 * typed. `npm run bench -- --report` rewrites them;
 * `npm run bench -- --report --check` only says whether they are current (exit 1 if not).
 */
export const RECORD_FILE = join(__dirname, 'results', 'record.json');
export const DOC_FILE = join(__dirname, '..', '..', 'docs', 'benchmarks.md');
const CHART_DIR = join(__dirname, '..', '..', 'docs', 'bench');
const README_FILE = join(__dirname, '..', '..', 'README.md');

/** Where each part of the record was measured (a record may combine the newest run of each scenario). */
export interface RecordSource {
  what: string;
  quick: boolean;
  durationSeconds: number;
  machine: BenchResults['machine'];
  contendedClients?: string;
}

export interface RecordResults extends BenchResults {
  sources?: RecordSource[];
  semaphore?: SemaphoreResult;
}

/** Two text columns, then numbers. */
const LL = ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r'] as const;
const bold = (ours: boolean, text: string) => (ours ? `**${text}**` : text);

function sourcesBlock(r: RecordResults): string[] {
  const sources: RecordSource[] = r.sources ?? [
    {
      what: 'every scenario',
      quick: r.quick,
      durationSeconds: r.durationSeconds,
      machine: r.machine,
    },
  ];
  return [
    '| part of the record | machine | load at start → end | run length s |',
    '| :-- | :-- | --: | --: |',
    ...sources.map(
      (s) =>
        `| ${s.what} | ${s.machine.cpu.replace(/\s+Processor$/, '')}, Node ${s.machine.node} | ` +
        `${s.machine.loadAverageAtStart[0]} → ${s.machine.loadAverageAtEnd[0] ?? '?'} | ${s.durationSeconds} |`,
    ),
  ];
}

function uncontended(r: RecordResults): string[] {
  if (!r.uncontended) return [];
  const u = r.uncontended;
  return [
    `**Uncontended cycle.** Acquire + release of a new key on one connection; ${u.rounds} alternating rounds of ${u.roundMs} ms per contender.`,
    '',
    mdTable(
      ['system', 'contender', 'cycles/s', 'median ms', 'p99 ms', 'ours ÷ this'],
      u.rows.map((x) => [
        x.system,
        bold(x.ours, x.contender),
        fmtNum(x.opsPerSec),
        fmtMs(x.latency.median),
        fmtMs(x.latency.p99),
        x.ours ? '—' : fmtRatio(x.oursRatio),
      ]),
      LL,
    ),
  ];
}

function contended(r: RecordResults): string[] {
  if (!r.contended) return [];
  const c = r.contended;
  return [
    '',
    `**Contended handoff.** ${c.workers} workers in ${r.contendedClients ?? 'one process'} on one key, hold ${c.holdMs} ms, pause ${c.pauseMs} ms; ` +
      `${c.rounds} windows of ${c.windowMs / 1000} s per contender. Share = the least-served worker's grants ÷ the mean.`,
    '',
    mdTable(
      [
        'system',
        'contender',
        'handoffs/s',
        'p99 wait ms',
        'overlaps',
        'share',
        'ours ÷ this',
        'p99 this ÷ ours',
      ],
      c.rows.map((x) => [
        x.system,
        bold(x.ours, x.contender),
        fmtNum(x.handoffsPerSec),
        fmtMs(x.wait.p99),
        String(x.overlaps),
        fmtNum(x.minShare, 2),
        x.ours ? '—' : fmtRatio(x.handoffRatio),
        x.ours ? '—' : fmtRatio(x.p99Ratio),
      ]),
      LL,
    ),
  ];
}

function decorator(r: RecordResults): string[] {
  if (!r.decorator) return [];
  return [
    '',
    `**\`@Locked\` over HTTP.** Express, a new key per request; latency over one keep-alive connection, req/s from autocannon with ${r.decorator.connections} connections.`,
    '',
    mdTable(
      [
        'backend',
        'plain median ms',
        '@Locked median ms',
        'added ms',
        'plain req/s',
        '@Locked req/s',
      ],
      r.decorator.rows.map((x) => [
        x.backend,
        fmtMs(x.plain.median),
        fmtMs(x.locked.median),
        fmtMs(x.addedMedianMs),
        fmtNum(x.plainReqPerSec),
        fmtNum(x.lockedReqPerSec),
      ]),
    ),
  ];
}

function watchdog(r: RecordResults): string[] {
  if (!r.watchdog) return [];
  return [
    '',
    '**Watchdog at scale.** Locks held at once by one process on Redis, renewed every ttl/3; CPU over two renewal periods.',
    '',
    mdTable(
      [
        'locks',
        'renewals/s',
        'pipelines / tick',
        'CPU % of a core',
        'heap B / lock',
        'Redis B / lock',
        'lost',
      ],
      r.watchdog.rows.map((x) => [
        fmtNum(x.locks),
        fmtNum(x.renewalsPerSec),
        fmtNum(x.pipelinesPerTick),
        fmtNum(x.cpuPercentOfCore, 2),
        fmtNum(x.heapBytesPerLock),
        fmtNum(x.redisBytesPerLock),
        String(x.lost),
      ]),
    ),
  ];
}

function scaling(r: RecordResults, charts: string[]): string[] {
  if (!r.scaling) return [];
  const s = r.scaling;
  const counts = [...new Set(s.series.flatMap((x) => x.points.map((p) => p.workers)))].sort(
    (a, b) => a - b,
  );
  return [
    '',
    `**Scaling curve.** The contended loop with 1 to ${counts[counts.length - 1]} workers, one ${s.windowMs / 1000} s window per point. Cells: handoffs/s (p99 wait ms).`,
    '',
    mdTable(
      ['contender', ...counts.map(String)],
      s.series.map((x) => [
        bold(x.ours, x.contender),
        ...counts.map((n) => {
          const p = x.points.find((q) => q.workers === n);
          return p ? `${fmtNum(p.handoffsPerSec)} (${fmtMs(p.p99Wait)})` : 'n/a';
        }),
      ]),
    ),
    '',
    charts.map((c) => `![${c.replace(/\.svg$/, '')}](bench/${c})`).join(' '),
  ];
}

function semaphore(r: RecordResults): string[] {
  if (!r.semaphore) return [];
  const m = r.semaphore;
  const perSec = (impl: string) => m.uncontended.find((x) => x.impl === impl)?.perSec ?? NaN;
  const row = (label: string) => (x: SemaphoreResult['uncontended'][number]) => [
    label,
    bold(x.impl === 'ours', x.impl),
    fmtNum(x.perSec),
    fmtMs(x.latency.median),
    fmtMs(x.latency.p99),
  ];
  return [
    '',
    `**Redis semaphore.** Permits ${m.permits}; ${m.rounds} rounds of ${m.windowMs / 1000} s; contended: ${m.processes} processes. ` +
      `Each library's two calls alone, without its JavaScript: ours ${fmtNum(perSec('scripts-only'))}/s, ` +
      `redis-semaphore's ${fmtNum(perSec('their-calls'))}/s.`,
    '',
    mdTable(
      ['load', 'contender', 'acquisitions/s', 'median ms', 'p99 ms'],
      [
        ...m.uncontended.filter((x) => MEASURED.includes(x.impl)).map(row('uncontended')),
        ...m.contended.map(row('contended')),
      ],
      LL,
    ),
  ];
}

/** The libraries themselves; the bare-call rows go into the caption. */
const MEASURED: string[] = ['ours', 'redis-semaphore'];

/** The page's block (before Prettier). */
export function renderRecord(r: RecordResults, charts: string[]): string {
  return [
    ...sourcesBlock(r),
    '',
    ...uncontended(r),
    ...contended(r),
    ...decorator(r),
    ...watchdog(r),
    ...scaling(r, charts),
    ...semaphore(r),
  ].join('\n');
}

/** README's one table: every backend of ours, uncontended and contended. */
export function renderSummary(r: RecordResults): string {
  const systems = [...new Set((r.uncontended?.rows ?? []).map((x) => x.system))];
  const ours = <T extends { system: string; ours: boolean }>(rows: T[] | undefined, s: string) =>
    rows?.find((x) => x.ours && x.system === s);
  return mdTable(
    [
      'backend',
      'uncontended acquire + release, median',
      'cycles/s',
      'contended handoffs/s (8 processes)',
      'p99 wait',
    ],
    systems.map((s) => {
      const u = ours(r.uncontended?.rows, s);
      const c = ours(r.contended?.rows, s);
      return [
        SYSTEM_NAMES[s] ?? s,
        u ? `${fmtMs(u.latency.median)} ms` : 'n/a',
        u ? fmtNum(u.opsPerSec) : 'n/a',
        c ? fmtNum(c.handoffsPerSec) : 'n/a',
        c ? `${fmtMs(c.wait.p99)} ms` : 'n/a',
      ];
    }),
  );
}

const SYSTEM_NAMES: Record<string, string> = {
  memory: 'memory',
  redis: 'Redis',
  redlock: 'Redlock (3 masters)',
  etcd: 'etcd',
  zookeeper: 'ZooKeeper',
  mysql: 'MySQL (MariaDB)',
  postgres: 'PostgreSQL',
};

/** `text` with the body between `<!-- bench:NAME:begin … -->` and `<!-- bench:NAME:end -->` replaced. */
function replaceBlock(file: string, text: string, name: string, body: string): string {
  const begin = `<!-- bench:${name}:begin (generated by \`npm run bench -- --report\`; do not edit) -->`;
  const end = `<!-- bench:${name}:end -->`;
  const start = text.indexOf(`<!-- bench:${name}:begin`);
  const stop = text.indexOf(end);
  if (start < 0 || stop < start) throw new Error(`${file}: no ${begin} … ${end} block`);
  return `${text.slice(0, start)}${begin}\n\n${body}\n\n${end}${text.slice(stop + end.length)}`;
}

async function formatted(file: string, text: string): Promise<string> {
  const options = await prettier.resolveConfig(file);
  return prettier.format(text, { ...options, filepath: file });
}

/** The two generated files' new text from `record` (the charts are written to `chartDir`). */
export async function regenerate(
  record: RecordResults,
  chartDir = CHART_DIR,
): Promise<Map<string, string>> {
  const charts = writeCharts(record, chartDir, 'record');
  const page = readFileSync(DOC_FILE, 'utf8');
  const readme = readFileSync(README_FILE, 'utf8');
  return new Map([
    [
      DOC_FILE,
      await formatted(
        DOC_FILE,
        replaceBlock(DOC_FILE, page, 'record', renderRecord(record, charts)),
      ),
    ],
    [
      README_FILE,
      await formatted(
        README_FILE,
        replaceBlock(README_FILE, readme, 'summary', renderSummary(record)),
      ),
    ],
  ]);
}

const readRecord = () => JSON.parse(readFileSync(RECORD_FILE, 'utf8')) as RecordResults;
const rel = (file: string) => relative(join(__dirname, '..', '..'), file);

/** What is stale: a generated block, or a chart under docs/bench/ (nothing is written). */
export async function staleParts(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-record-'));
  try {
    const stale: string[] = [];
    for (const [file, text] of await regenerate(readRecord(), dir))
      if (text !== readFileSync(file, 'utf8')) stale.push(rel(file));
    for (const chart of readdirSync(dir)) {
      const committed = join(CHART_DIR, chart);
      if (!existsSync(committed) || !readFileSync(committed).equals(readFileSync(join(dir, chart))))
        stale.push(rel(committed));
    }
    return stale;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function reportMain(args: string[]): Promise<number> {
  if (args.includes('--check')) {
    const stale = await staleParts();
    for (const s of stale) console.error(`${s}: stale: run \`npm run bench -- --report\``);
    return stale.length ? 1 : 0;
  }
  for (const [file, text] of await regenerate(readRecord())) writeFileSync(file, text);
  console.log(
    'docs/benchmarks.md, README.md and docs/bench/record-*.svg regenerated from results/record.json',
  );
  return 0;
}
