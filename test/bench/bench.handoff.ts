import type { BenchServers } from './bench.servers';
import { sleep, summarize, type Summary } from './bench.stats';
import type { Contender, LockClient } from './bench.contenders';

/**
 * The contended loop: `workers` clients (each its own connection, as separate processes would be)
 * fight for ONE key; each takes it, holds it `holdMs`, releases, pauses `pauseMs`, repeats until the
 * window closes. A waiter whose library gives up (redlock after its retries, ours at its wait
 * deadline) tries again at once; its wait is counted from its first attempt. An overlap detector
 * counts any moment two workers believed they held the key (it must stay 0).
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

/** One window's result plus its raw wait samples (for pooling rounds; not written to JSON). */
export type HandoffRun = HandoffResult & { samples: number[] };

export async function runHandoff(contender: Contender, servers: BenchServers, o: HandoffOptions, shared?: LockClient[]): Promise<HandoffRun> {
  const clients = shared ?? (await Promise.all(Array.from({ length: o.workers }, () => contender.connect(servers))));
  const waits: number[] = [];
  let holders = 0;
  let overlaps = 0;
  let giveUps = 0;
  let errors = 0;
  let longestWait = 0;
  const start = performance.now();
  const end = start + o.durationMs;
  const waitingSince = new Set<number>();

  const grants = clients.map(() => 0);
  const worker = async (client: LockClient, w: number): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      waitingSince.add(t0);
      let release: (() => Promise<void>) | undefined;
      while (!release) {
        try {
          release = await client.lock(o.key);
        } catch (error) {
          if (isGiveUp(error)) giveUps++;
          else {
            errors++;
            await sleep(10);
          }
        }
      }
      waitingSince.delete(t0);
      const got = performance.now();
      if (++holders > 1) overlaps++;
      if (got <= end) {
        waits.push(got - t0);
        grants[w]++;
      }
      longestWait = Math.max(longestWait, got - t0);
      await sleep(o.holdMs);
      holders--;
      await release().catch(() => errors++);
      await sleep(o.pauseMs);
    }
  };

  const done = Promise.all(clients.map((c, w) => worker(c, w)));
  // Waiters still waiting when the window closes count towards the longest wait (a lower bound).
  await sleep(o.durationMs);
  for (const t0 of waitingSince) longestWait = Math.max(longestWait, performance.now() - t0);
  await done;
  if (!shared) await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  const wait = summarize(waits);
  return {
    acquisitions: waits.length,
    handoffsPerSec: waits.length / (o.durationMs / 1000),
    wait,
    longestWait,
    giveUps,
    errors,
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
