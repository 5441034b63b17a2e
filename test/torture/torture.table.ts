import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TortureReport } from './torture.runner';

/**
 * The torture table from a directory of run reports (`--report <dir>/<backend>-<seed>.json`):
 * backend x seed, grants per workload, faults per nemesis, violations, liveness.
 * Usage: ts-node --transpile-only test/torture/torture.table.ts <dir> [commit]
 */
export function tortureTable(reports: TortureReport[], commit = ''): string {
  const rows = [...reports].sort(
    (a, b) => a.options.backend.localeCompare(b.options.backend) || a.options.seed - b.options.seed,
  );
  const head =
    '| backend | seed | grants: plain / semaphore / multi-key | semaphore sections (most holders) | faults: kill / pause / restart / partition / delay / clock | writes accepted / refused by the fence | locks lost | lost updates | overlaps | tokens backwards | holders over permits | writes after lost | live | crashes | commit |';
  const lines = [head, `|${'---|'.repeat(15)}`];
  for (const r of rows) {
    const x = r.result;
    const f = r.faults;
    const most = Object.entries(x.maxHolders ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    const tokens =
      r.options.backend === 'redlock' && x.tokensBackwards > 0
        ? `${x.tokensBackwards} (best-effort)`
        : String(x.tokensBackwards);
    lines.push(
      `| ${r.options.backend} | ${r.options.seed} | ${x.ops.grantedBy.plain} / ${x.ops.grantedBy.semaphore} / ${x.ops.grantedBy.multi} | ${x.ops.semaphoreSections} (${most}) | ${f.kill} / ${f.pause} / ${f.restart} / ${f.partition} / ${f.delay} / ${f.clock} | ${x.ops.writesAccepted} / ${x.ops.writesRejected} | ${x.ops.lost} | ${x.lostUpdates} | ${x.overlaps + x.readerWriterOverlaps} | ${tokens} | ${x.semaphoreOverflows} | ${x.writesAfterLost} | ${x.live ? 'yes' : `no (stuck ${x.stuckWorkers.join(',') || '-'})`} | ${r.crashes.length} | ${commit} |`,
    );
  }
  return lines.join('\n');
}

if (require.main === module) {
  const dir = process.argv[2];
  const reports = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as TortureReport);
  console.log(tortureTable(reports, process.argv[3]));
}
