import type { BenchServers } from './bench.servers';
import { sleep, summarize, type Summary } from './bench.stats';
import type { Contender, LockClient } from './bench.contenders';
import type { WorkerPool } from './bench.workers';

/**
 * The contended loop: `workers` clients, each with its own connection, fight for ONE key; each takes
 * it, holds it `holdMs`, releases, pauses `pauseMs`, repeats until the window closes. The clients
 * run in separate worker processes (as separate app instances would), spread evenly over the pool;
 * the memory backend, which is in-process by nature, runs its clients in this process. A waiter whose
 * library gives up (redlock after its retries, ours at its wait deadline) asks again at once; its
 * wait counts from its first attempt. Holds are recorded on the system-wide monotonic clock
 * (process.hrtime), so overlapping holds across processes are detected (they must be 0).
 */
export interface HandoffOptions {
  workers: number;
  durationMs: number;
  holdMs: number;
  pauseMs: number;
  key: string;
}

export interface HandoffResult {
  acquisitions: number;
  handoffsPerSec: number;
  wait: Summary;
  /** Longest wait including waiters still waiting when the window closed (ms). */
  longestWait: number;
  /** Times a library gave up waiting and the worker had to ask again. */
  giveUps: number;
  /** Acquire errors other than giving up (connection errors, ...). */
  errors: number;
  /** Moments two workers held the key at once (mutual exclusion violated). */
  overlaps: number;
  /** Fairness: the least-served worker's grants ÷ the mean per worker (1 = even, 0 = one starved). */
  minShare: number;
}

/** What the clients of one process report for a window (JSON-safe: it crosses IPC). */
export interface ClientsReport {
  waits: number[];
  grants: number[];
  /** [start, end] of every hold, hrtime ns as strings. */
  holds: [string, string][];
  giveUps: number;
  errors: number;
  longestWait: number;
}

/** One window's result plus its raw wait samples (for pooling rounds; not written to JSON). */
export type HandoffRun = HandoffResult & { samples: number[] };

/** Runs `clients` from `startNs` (hrtime) for `o.durationMs`; the loop of every worker. */
export async function driveClients(
  clients: LockClient[],
  o: Omit<HandoffOptions, 'workers'>,
  startNs: bigint,
): Promise<ClientsReport> {
  const ms = (ns: bigint) => Number(ns - startNs) / 1e6;
  const now = () => ms(process.hrtime.bigint());
  await sleep(Math.max(0, -now()));
  const r: ClientsReport = {
    waits: [],
    grants: clients.map(() => 0),
    holds: [],
    giveUps: 0,
    errors: 0,
    longestWait: 0,
  };
  const end = o.durationMs;
  const waitingSince = new Set<number>();
  const worker = async (client: LockClient, w: number): Promise<void> => {
    while (now() < end) {
      const t0 = now();
      waitingSince.add(t0);
      let release: (() => Promise<void>) | undefined;
      while (!release) {
        try {
          release = await client.lock(o.key);
        } catch (error) {
          if (isGiveUp(error)) r.giveUps++;
          else {
            r.errors++;
            await sleep(10);
          }
        }
      }
      waitingSince.delete(t0);
      const gotNs = process.hrtime.bigint();
      const got = ms(gotNs);
      if (got <= end) {
        r.waits.push(got - t0);
        r.grants[w]++;
      }
      r.longestWait = Math.max(r.longestWait, got - t0);
      await sleep(o.holdMs);
      r.holds.push([String(gotNs), String(process.hrtime.bigint())]);
      await release().catch(() => r.errors++);
      await sleep(o.pauseMs);
    }
  };
  const done = Promise.all(clients.map((c, w) => worker(c, w)));
  // Waiters still waiting when the window closes count towards the longest wait (a lower bound).
  await sleep(Math.max(0, end - now()));
  for (const t0 of waitingSince) r.longestWait = Math.max(r.longestWait, now() - t0);
  await done;
  return r;
}

/** One window; `pool` undefined = all clients in this process (always so for memory). */
export async function runHandoff(
  contender: Contender,
  servers: BenchServers,
  o: HandoffOptions,
  pool: WorkerPool | undefined,
): Promise<HandoffRun> {
  let reports: ClientsReport[];
  if (contender.system === 'memory' || !pool) {
    const clients = await Promise.all(
      Array.from({ length: o.workers }, () => contender.connect(servers)),
    );
    await driveClients(
      clients,
      { ...o, key: `${o.key}:warm-up`, durationMs: warmUpMs(o.durationMs) },
      process.hrtime.bigint(),
    );
    reports = [await driveClients(clients, o, process.hrtime.bigint() + 20_000_000n)];
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  } else {
    await servers.need(contender.system);
    reports = await pool.run(contender, servers.endpoints(), o, warmUpMs(o.durationMs));
  }
  return merge(reports, o.durationMs);
}

/** Unmeasured warm-up before each window: a fifth of it, between 100 ms and 1 s. */
function warmUpMs(durationMs: number): number {
  return Math.min(1_000, Math.max(100, durationMs / 5));
}

function merge(reports: ClientsReport[], durationMs: number): HandoffRun {
  const waits = reports.flatMap((r) => r.waits);
  const grants = reports.flatMap((r) => r.grants);
  const holds = reports.flatMap((r) => r.holds).map(([a, b]) => [BigInt(a), BigInt(b)] as const);
  holds.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  let overlaps = 0;
  let lastEnd = -1n;
  for (const [start, end] of holds) {
    if (start < lastEnd) overlaps++;
    if (end > lastEnd) lastEnd = end;
  }
  return {
    acquisitions: waits.length,
    handoffsPerSec: waits.length / (durationMs / 1000),
    wait: summarize(waits),
    longestWait: Math.max(0, ...reports.map((r) => r.longestWait)),
    giveUps: reports.reduce((s, r) => s + r.giveUps, 0),
    errors: reports.reduce((s, r) => s + r.errors, 0),
    overlaps,
    minShare: waits.length ? Math.min(...grants) / (waits.length / grants.length) : 0,
    samples: waits,
  };
}

/** Pools several rounds of one contender into one result. */
export function pool(rounds: HandoffRun[], durationMs: number): HandoffResult {
  const all = rounds.flatMap((r) => r.samples);
  return {
    acquisitions: all.length,
    handoffsPerSec: all.length / ((durationMs * rounds.length) / 1000),
    wait: summarize(all),
    longestWait: Math.max(...rounds.map((r) => r.longestWait)),
    giveUps: rounds.reduce((s, r) => s + r.giveUps, 0),
    errors: rounds.reduce((s, r) => s + r.errors, 0),
    overlaps: rounds.reduce((s, r) => s + r.overlaps, 0),
    minShare: Math.min(...rounds.map((r) => r.minShare)),
  };
}

/** A library's "I waited and it is still busy" (ours, redlock, redis-semaphore, raw, etcd3). */
function isGiveUp(error: unknown): boolean {
  const e = error as { name?: string; code?: string; message?: string };
  return (
    e?.code === 'LOCK_ACQUIRE_TIMEOUT' ||
    e?.name === 'LockAcquireTimeoutError' ||
    e?.name === 'LockError' ||
    e?.name === 'TimeoutError' ||
    e?.name === 'EtcdLockFailedError' ||
    /still busy|Exceeded \d+ attempts|Acquire .* timeout/i.test(e?.message ?? '')
  );
}
