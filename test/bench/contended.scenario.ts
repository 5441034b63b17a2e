import type { System } from './bench.servers';
import { rotation } from './bench.stats';
import { pool, runHandoff, type HandoffResult, type HandoffRun } from './bench.handoff';
import { contendersFor, reason, type BenchContext, type Skipped } from './bench.context';
import { slug } from './uncontended.scenario';

/**
 * Scenario 2, the contended handoff: 8 workers on one key, each holds 1 ms, pauses 2 ms, repeats;
 * 10 s per contender in total (two alternating 5 s windows; quick: one 1 s window). Competitors keep
 * their documented defaults, so a poller shows what its polling costs.
 */
export interface ContendedRow extends HandoffResult {
  system: System;
  contender: string;
  ours: boolean;
  waits: string;
  /** ours handoffs/s ÷ this contender's (competitor rows). */
  handoffRatio?: number;
  /** this contender's p99 wait ÷ ours (competitor rows): how many times longer its tail is. */
  p99Ratio?: number;
}

export interface ContendedResult {
  workers: number;
  holdMs: number;
  pauseMs: number;
  windowMs: number;
  rounds: number;
  rows: ContendedRow[];
  skipped: Skipped[];
}

export const WORKERS = 8;
export const HOLD_MS = 1;
export const PAUSE_MS = 2;

export async function runContended(ctx: BenchContext): Promise<ContendedResult> {
  const rounds = ctx.quick ? 1 : 2;
  const windowMs = ctx.quick ? 1_000 : 5_000;
  const rows: ContendedRow[] = [];
  const skipped: Skipped[] = [];
  for (const system of ctx.systems) {
    const contenders = contendersFor(system);
    const runs = new Map<string, HandoffRun[]>();
    try {
      for (let round = 0; round < rounds; round++) {
        for (const c of rotation(contenders, round)) {
          const r = await runHandoff(
            c,
            ctx.servers,
            {
              workers: WORKERS,
              durationMs: windowMs,
              holdMs: HOLD_MS,
              pauseMs: PAUSE_MS,
              key: `h${round}:${slug(c.name)}`,
            },
            ctx.inProcess ? undefined : await ctx.workerPool(),
          );
          runs.set(c.name, [...(runs.get(c.name) ?? []), r]);
          ctx.log(
            `contended ${system} ${c.name} round ${round}: ${r.handoffsPerSec.toFixed(0)}/s, p99 wait ${r.wait.p99.toFixed(1)} ms`,
          );
        }
      }
    } catch (error) {
      skipped.push({ system, reason: reason(error) });
      continue;
    }
    const pooled = contenders.map((c) => ({ c, r: pool(runs.get(c.name) ?? [], windowMs) }));
    const base = pooled.find((x) => x.c.ours)?.r;
    for (const { c, r } of pooled) {
      rows.push({
        system,
        contender: c.name,
        ours: c.ours,
        waits: c.waits,
        ...r,
        handoffRatio: c.ours || !base ? undefined : base.handoffsPerSec / r.handoffsPerSec,
        p99Ratio: c.ours || !base ? undefined : r.wait.p99 / base.wait.p99,
      });
    }
  }
  return { workers: WORKERS, holdMs: HOLD_MS, pauseMs: PAUSE_MS, windowMs, rounds, rows, skipped };
}
