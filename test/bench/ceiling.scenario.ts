import { contendersFor, reason, type BenchContext, type Skipped } from './bench.context';
import { driveClients, runHandoff } from './bench.handoff';
import type { LockClient } from './bench.contenders';
import { summarize } from './bench.stats';
import {
  diff,
  readCounters,
  writeSampler,
  type CeilingSystem,
  type Counters,
} from './ceiling.counters';

/**
 * The durable-write ceiling (`--scenarios=ceiling`, etcd and ZooKeeper): one durable (fsynced)
 * write is the physical unit of a consensus store, so ours is measured against the server's own
 * sequential write rate, sampled in the same run between our windows:
 * - writes/s: WRITES awaited writes from one client, one at a time (etcd: PUT; ZooKeeper: create
 *   then delete of a persistent node);
 * - handoffs/s: 6 worker processes on one key, hold 1 ms, pause 2 ms (the contended loop);
 * - cycle: one client's uncontended acquire + release of a new key, in durable writes' time (the
 *   writes timed in short blocks alternating with blocks of cycles); and of one key again and
 *   again (a hot key: on ZooKeeper its directory stays, see zookeeper.dirs.ts).
 * Rounds alternate write samples and our windows, so both share the machine's drift. Beside the
 * rates, the server's own counters (ceiling.counters.ts) account for a cycle and a handoff:
 * requests, durable writes (raft proposals / zxids) and fsyncs, per operation.
 */
export interface CeilingRow {
  system: CeilingSystem;
  /** The server's sequential durable writes/s (mean of the samples) and each sample. */
  writesPerSec: number;
  writeSamples: number[];
  handoffsPerSec: number;
  handoffSamples: number[];
  overlaps: number;
  /** handoffs/s ÷ writes/s (target ≥ 0.5). */
  handoffRatio: number;
  /**
   * Mean uncontended acquire + release, ms, and ÷ the mean write of the blocks that alternated
   * with the cycles' blocks: the cycle in durable writes' time (target ≤ 2.5).
   */
  cycleMs: number;
  cycleWrites: number;
  /** The same for one key cycled again and again. */
  hotCycleMs: number;
  hotCycleWrites: number;
  /** Server counters per uncontended cycle (new key, hot key) and per contended handoff. */
  perCycle: Counters;
  perHotCycle: Counters;
  perHandoff: Counters;
}

export interface CeilingResult {
  rounds: number;
  windowMs: number;
  rows: CeilingRow[];
  skipped: Skipped[];
}

const WORKERS = 6;
const HOLD_MS = 1;
const PAUSE_MS = 2;
const WRITES = 400;
/** The uncontended cycle is timed in blocks of BLOCK_CYCLES, each after BLOCK_WRITES writes. */
const BLOCK_WRITES = 40;
const BLOCK_CYCLES = 20;
const SYSTEMS: CeilingSystem[] = ['etcd', 'zookeeper'];

export async function runCeiling(ctx: BenchContext): Promise<CeilingResult> {
  const rounds = ctx.quick ? 1 : 3;
  const windowMs = ctx.quick ? 1_000 : 4_000;
  const rows: CeilingRow[] = [];
  const skipped: Skipped[] = [];
  for (const system of SYSTEMS.filter((s) => ctx.systems.includes(s))) {
    try {
      rows.push(await ceilingOf(ctx, system, rounds, windowMs));
    } catch (error) {
      skipped.push({ system, reason: reason(error) });
    }
  }
  return { rounds, windowMs, rows, skipped };
}

async function ceilingOf(
  ctx: BenchContext,
  system: CeilingSystem,
  rounds: number,
  windowMs: number,
): Promise<CeilingRow> {
  await ctx.servers.need(system);
  const ours = contendersFor(system)[0];
  const writes = await writeSampler(system, ctx.servers);
  const one = await ours.connect(ctx.servers);
  const writeSamples: number[] = [];
  const handoffSamples: number[] = [];
  const cycles: number[] = [];
  const hotCycles: number[] = [];
  let overlaps = 0;
  let blockWriteMs = 0;
  let blockWrites = 0;
  try {
    await writes.sample(WRITES / 4);
    await cycle(one, `warm:${system}`, 50, []);
    for (let round = 0; round < rounds; round++) {
      writeSamples.push(await writes.sample(WRITES));
      const r = await runHandoff(
        ours,
        ctx.servers,
        {
          workers: WORKERS,
          durationMs: windowMs,
          holdMs: HOLD_MS,
          pauseMs: PAUSE_MS,
          key: `c${round}`,
        },
        ctx.inProcess ? undefined : await ctx.workerPool(),
      );
      handoffSamples.push(r.handoffsPerSec);
      overlaps += r.overlaps;
      writeSamples.push(await writes.sample(WRITES));
      // The cycle against the writes in short alternating blocks: both see the same machine.
      for (let block = 0; block < (ctx.quick ? 3 : 8); block++) {
        const t0 = performance.now();
        await writes.sample(BLOCK_WRITES);
        blockWriteMs += performance.now() - t0;
        blockWrites += BLOCK_WRITES;
        await cycle(one, `u${round}.${block}:${system}`, BLOCK_CYCLES, cycles, false);
        await cycle(one, `hot:${system}`, BLOCK_CYCLES, hotCycles, false, true);
      }
      ctx.log(
        `ceiling ${system} round ${round}: writes ${writeSamples
          .slice(-2)
          .map((w) => w.toFixed(0))
          .join(' / ')}/s, ` +
          `${r.handoffsPerSec.toFixed(0)} handoffs/s, cycle ${summarize(cycles).mean.toFixed(2)} ms, ` +
          `hot key ${summarize(hotCycles).mean.toFixed(2)} ms`,
      );
    }
    const perCycle = await account(
      system,
      ctx,
      () => cycle(one, `acc:${system}`, 200, [], false),
      200,
    );
    const perHotCycle = await account(
      system,
      ctx,
      () => cycle(one, `hot:${system}`, 200, [], false, true),
      200,
    );
    const perHandoff = await accountHandoffs(system, ctx);
    const writesPerSec = mean(writeSamples);
    const handoffsPerSec = mean(handoffSamples);
    const cycleMs = summarize(cycles).mean;
    const hotCycleMs = summarize(hotCycles).mean;
    const writeMs = blockWriteMs / blockWrites;
    return {
      system,
      writesPerSec,
      writeSamples,
      handoffsPerSec,
      handoffSamples,
      overlaps,
      handoffRatio: handoffsPerSec / writesPerSec,
      cycleMs,
      cycleWrites: cycleMs / writeMs,
      hotCycleMs,
      hotCycleWrites: hotCycleMs / writeMs,
      perCycle,
      perHotCycle,
      perHandoff,
    };
  } finally {
    await one.close().catch(() => undefined);
    await writes.close().catch(() => undefined);
  }
}

/**
 * Sequential acquire + release of new keys (or of the key `prefix` itself when `sameKey`):
 * `count` cycles, or for `count` ms when `ms`.
 */
async function cycle(
  client: LockClient,
  prefix: string,
  count: number,
  samples: number[],
  ms = true,
  sameKey = false,
) {
  const until = performance.now() + count;
  for (let i = 0; ms ? performance.now() < until : i < count; i++) {
    const t0 = performance.now();
    const release = await client.lock(sameKey ? prefix : `${prefix}:${i}`);
    await release();
    samples.push(performance.now() - t0);
  }
}

/** Server counters around `run`, per `per` operations. */
async function account(
  system: CeilingSystem,
  ctx: BenchContext,
  run: () => Promise<unknown>,
  per: number | (() => number),
): Promise<Counters> {
  const before = await readCounters(system, ctx.servers);
  await run();
  const after = await readCounters(system, ctx.servers);
  return diff(system, before, after, typeof per === 'number' ? per : per());
}

/** Counters per grant of the contended loop, its WORKERS clients in this process (no warm-up). */
async function accountHandoffs(system: CeilingSystem, ctx: BenchContext): Promise<Counters> {
  const ours = contendersFor(system)[0];
  const clients = await Promise.all(
    Array.from({ length: WORKERS }, () => ours.connect(ctx.servers)),
  );
  const o = { durationMs: 1_000, holdMs: HOLD_MS, pauseMs: PAUSE_MS, key: `acc-h:${system}` };
  try {
    await driveClients(clients, { ...o, key: `${o.key}:warm` }, process.hrtime.bigint());
    let grants = 0;
    return await account(
      system,
      ctx,
      async () => (grants = (await driveClients(clients, o, process.hrtime.bigint())).holds.length),
      () => grants,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The report's section. */
export function ceilingSection(r: CeilingResult): string {
  const fmt = (c: Counters) =>
    Object.entries(c)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(', ');
  return [
    '',
    `## Durable-write ceiling (etcd, ZooKeeper; ${r.rounds} rounds of ${r.windowMs} ms, alternating with write samples)`,
    '',
    `Writes/s: ${WRITES} sequential awaited durable writes from one client (etcd PUT; ZooKeeper create/delete of a ` +
      `persistent node), sampled before and after each window. Handoffs: ${WORKERS} worker processes on one key, ` +
      `hold ${HOLD_MS} ms, pause ${PAUSE_MS} ms. Cycle: one client's uncontended acquire + release of a new key, in blocks of ${BLOCK_CYCLES} ` +
      `alternating with blocks of ${BLOCK_WRITES} writes (cycle in writes = mean cycle ÷ those blocks' mean write); ` +
      `hot key: the same, one key again and again.`,
    '',
    '| system | durable writes/s | handoffs/s | handoffs ÷ writes | cycle ms | cycle in writes | hot key ms | hot key in writes | overlaps |',
    '| :-- | --: | --: | --: | --: | --: | --: | --: | --: |',
    ...r.rows.map(
      (x) =>
        `| ${x.system} | ${x.writesPerSec.toFixed(0)} | ${x.handoffsPerSec.toFixed(0)} | ${x.handoffRatio.toFixed(2)}× | ` +
        `${x.cycleMs.toFixed(2)} | ${x.cycleWrites.toFixed(2)} | ${x.hotCycleMs.toFixed(2)} | ` +
        `${x.hotCycleWrites.toFixed(2)} | ${x.overlaps} |`,
    ),
    '',
    ...r.rows.flatMap((x) => [
      `- ${x.system} per uncontended cycle: ${fmt(x.perCycle)}`,
      `- ${x.system} per uncontended cycle of a hot key: ${fmt(x.perHotCycle)}`,
      `- ${x.system} per contended grant: ${fmt(x.perHandoff)}`,
    ]),
    ...r.skipped.map((s) => `- ${s.system} skipped: ${s.reason}`),
    '',
  ].join('\n');
}
