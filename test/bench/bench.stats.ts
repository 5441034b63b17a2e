import { readFileSync } from 'node:fs';
/**
 * Small statistics and formatting helpers for the benchmark harness. Samples are latencies in ms
 * (performance.now differences, microsecond resolution); percentiles use the nearest-rank method
 * on the sorted samples, so p99 of 100 samples is the 99th smallest.
 */
export interface Summary {
  n: number;
  median: number;
  p99: number;
  mean: number;
  max: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    n: sorted.length,
    median: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.length ? sum / sorted.length : NaN,
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
  };
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/** ms with a sensible number of digits: 0.0831, 1.24, 187. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  if (ms < 1) return ms.toFixed(3);
  if (ms < 10) return ms.toFixed(2);
  if (ms < 100) return ms.toFixed(1);
  return ms.toFixed(0);
}

export function fmtNum(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return 'n/a';
  return n.toLocaleString('en-US', {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  });
}

/** "1.23×" (ours relative to another result); n/a when either side is missing. */
export function fmtRatio(r: number | undefined): string {
  return r === undefined || !Number.isFinite(r) ? 'n/a' : `${r.toFixed(2)}×`;
}

/** A GitHub-flavoured Markdown table. */
export function mdTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  align?: readonly ('l' | 'r')[],
): string {
  const sep = header.map((_, i) =>
    (align?.[i] ?? (i === 0 ? 'l' : 'r')) === 'r' ? '---:' : ':---',
  );
  return [header, sep, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs `tasks` with at most `limit` in flight. */
export async function inParallel(
  count: number,
  limit: number,
  task: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, count) }, async () => {
    while (next < count) await task(next++);
  });
  await Promise.all(lanes);
}

/** The order contenders run in round `round`: rotated so that no one always goes first or last. */
export function rotation<T>(items: readonly T[], round: number): T[] {
  const k = round % Math.max(1, items.length);
  return [...items.slice(k), ...items.slice(0, k)];
}

/** CPU time (user + system, ms) a process has used so far, from /proc (10 ms resolution). */
export function procCpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ": field 3 is index 0, so utime (14) and stime (15) are indexes 11 and 12.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SEC;
  } catch {
    return NaN;
  }
}

/** This process's CPU time so far (ms, microsecond resolution). */
export function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

const CLOCK_TICKS_PER_SEC = 100;
