import type { System } from './bench.servers';
import { ownCpuMs, rotation, summarize, type Summary } from './bench.stats';
import type { LockClient } from './bench.contenders';
import { contendersFor, reason, type BenchContext, type Skipped } from './bench.context';

/**
 * Scenario 1, the uncontended cycle: one connection, acquire + release of a new key each time, as
 * fast as one caller can go. Per system, every contender runs in the same process against the same
 * server, in rounds of equal length whose order rotates, after a warm-up; samples are pooled.
 */
export interface UncontendedRow {
  system: System;
  contender: string;
  ours: boolean;
  cycles: number;
  opsPerSec: number;
  latency: Summary;
  /** CPU µs per cycle in this (client) process, and in the server process(es). */
  clientCpuUs: number;
  serverCpuUs: number;
  /** ours ops/s ÷ this contender's ops/s (on competitor rows). */
  oursRatio?: number;
}

export interface UncontendedResult {
  rounds: number;
  roundMs: number;
  rows: UncontendedRow[];
  skipped: Skipped[];
}

export async function runUncontended(ctx: BenchContext): Promise<UncontendedResult> {
  // Many short rounds: on a shared machine, load from other processes comes and goes; short
  // alternating rounds spread it evenly over the contenders instead of penalising one.
  const rounds = ctx.quick ? 6 : 20;
  const roundMs = ctx.quick ? 100 : 400;
  const rows: UncontendedRow[] = [];
  const skipped: Skipped[] = [];
  for (const system of ctx.systems) {
    const contenders = contendersFor(system, { raw: true });
    const clients: {
      c: (typeof contenders)[number];
      client: LockClient;
      samples: number[];
      busyMs: number;
      cpuMs: number;
      serverMs: number;
    }[] = [];
    try {
      for (const c of contenders)
        clients.push({
          c,
          client: await c.connect(ctx.servers),
          samples: [],
          busyMs: 0,
          cpuMs: 0,
          serverMs: 0,
        });
    } catch (error) {
      skipped.push({ system, reason: reason(error) });
      await Promise.all(clients.map((x) => x.client.close().catch(() => undefined)));
      continue;
    }
    ctx.log(`uncontended ${system}: ${contenders.map((c) => c.name).join(', ')}`);
    for (const x of clients) await cycles(x.client, `warm:${slug(x.c.name)}`, roundMs / 2, []);
    for (let round = 0; round < rounds; round++) {
      for (const x of rotation(clients, round)) {
        const cpu0 = ownCpuMs();
        const server0 = ctx.servers.cpuMs(system);
        x.busyMs += await cycles(x.client, `u${round}:${slug(x.c.name)}`, roundMs, x.samples);
        x.cpuMs += ownCpuMs() - cpu0;
        x.serverMs += ctx.servers.cpuMs(system) - server0;
      }
    }
    const base = clients.find((x) => x.c.ours);
    const baseOps = base ? base.samples.length / (base.busyMs / 1000) : NaN;
    for (const x of clients) {
      const opsPerSec = x.samples.length / (x.busyMs / 1000);
      rows.push({
        system,
        contender: x.c.name,
        ours: x.c.ours,
        cycles: x.samples.length,
        opsPerSec,
        latency: summarize(x.samples),
        clientCpuUs: (x.cpuMs * 1000) / x.samples.length,
        serverCpuUs: (x.serverMs * 1000) / x.samples.length,
        oursRatio: x.c.ours ? undefined : baseOps / opsPerSec,
      });
      ctx.log(
        `  ${x.c.name}: ${opsPerSec.toFixed(0)} cycles/s, median ${summarize(x.samples).median.toFixed(3)} ms`,
      );
    }
    await Promise.all(clients.map((x) => x.client.close().catch(() => undefined)));
  }
  return { rounds, roundMs, rows, skipped };
}

/** Sequential acquire+release cycles on fresh keys for `ms`; returns the time spent. */
async function cycles(
  client: LockClient,
  prefix: string,
  ms: number,
  samples: number[],
): Promise<number> {
  const start = performance.now();
  const until = start + ms;
  let i = 0;
  let now = start;
  while (now < until) {
    const t0 = now;
    const release = await client.lock(`${prefix}:${i++}`);
    await release();
    now = performance.now();
    samples.push(now - t0);
  }
  return now - start;
}

export function slug(name: string): string {
  return name.replace(/[^A-Za-z0-9]+/g, '-');
}
