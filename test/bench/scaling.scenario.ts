import type { System } from './bench.servers';
import { ours, type Contender } from './bench.contenders';
import { redisSemaphore, redlockSingle } from './bench.competitors';
import { runHandoff } from './bench.handoff';
import { reason, type BenchContext, type Skipped } from './bench.context';
import { HOLD_MS, PAUSE_MS } from './contended.scenario';
import { slug } from './uncontended.scenario';

/**
 * Scenario 5, the scaling curve: the contended loop of scenario 2 with 1, 2, 4, 8, 16 and 32
 * workers, ours on Redis, etcd and ZooKeeper, with the two Redis competitors as reference lines.
 * Each point is one window; points of different contenders alternate.
 */
export const WORKER_COUNTS = [1, 2, 4, 8, 16, 32];

export interface ScalingSeries {
  system: System;
  contender: string;
  ours: boolean;
  points: {
    workers: number;
    handoffsPerSec: number;
    p50Wait: number;
    p99Wait: number;
    giveUps: number;
    overlaps: number;
    minShare: number;
  }[];
}

export interface ScalingResult {
  windowMs: number;
  series: ScalingSeries[];
  skipped: Skipped[];
}

export async function runScaling(ctx: BenchContext): Promise<ScalingResult> {
  // The least-served share is quantized: even perfect rotation gives floor(mean)/mean, where mean is
  // the grants per worker in the window. 300 ms windows gave 32 workers ~3.75 grants each, so a
  // perfectly fair queue scored 3/3.75 = 0.80; 1 s keeps the mean above 10 (share >= 0.9) at ~350/s.
  const windowMs = ctx.quick ? 1_000 : 3_000;
  const wanted: Contender[] = [];
  for (const s of ['redis', 'etcd', 'zookeeper'] as const)
    if (ctx.systems.includes(s)) wanted.push(ours(s));
  if (ctx.systems.includes('redis')) wanted.push(redisSemaphore, redlockSingle);
  const skipped: Skipped[] = [];
  const live: Contender[] = [];
  for (const c of wanted) {
    try {
      const probe = await c.connect(ctx.servers);
      await probe.close();
      live.push(c);
    } catch (error) {
      skipped.push({ system: c.system, reason: `${c.name}: ${reason(error)}` });
    }
  }
  const series: ScalingSeries[] = live.map((c) => ({
    system: c.system,
    contender: c.name,
    ours: c.ours,
    points: [],
  }));
  for (const workers of WORKER_COUNTS) {
    for (const [i, c] of live.entries()) {
      try {
        const r = await runHandoff(
          c,
          ctx.servers,
          {
            workers,
            durationMs: windowMs,
            holdMs: HOLD_MS,
            pauseMs: PAUSE_MS,
            key: `s${workers}:${slug(c.name)}`,
          },
          ctx.inProcess ? undefined : await ctx.workerPool(),
        );
        series[i].points.push({
          workers,
          handoffsPerSec: r.handoffsPerSec,
          p50Wait: r.wait.median,
          p99Wait: r.wait.p99,
          giveUps: r.giveUps,
          overlaps: r.overlaps,
          minShare: r.minShare,
        });
        ctx.log(
          `scaling ${c.name} x${workers}: ${r.handoffsPerSec.toFixed(0)}/s, p99 wait ${r.wait.p99.toFixed(1)} ms`,
        );
      } catch (error) {
        skipped.push({
          system: c.system,
          reason: `${c.name} with ${workers} workers: ${reason(error)}`,
        });
      }
    }
  }
  return { windowMs, series, skipped };
}
