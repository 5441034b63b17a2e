import { fork, type ChildProcess } from 'node:child_process';
import { Semaphore } from 'redis-semaphore';
// redis-semaphore's own acquire script helper (what its Semaphore calls per attempt).
import { acquireLua } from 'redis-semaphore/lib/semaphore/acquire/lua';
import { runScript } from '../../lib/backends/redis-client';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { DEFAULT_FENCE_RETENTION_MS as FENCE_RETENTION_MS } from '../../lib/backends/redis/redis.options';
import {
  SEM_RELEASE,
  SEM_PERMIT_FREE,
  semaphoreKeys,
} from '../../lib/backends/redis/redis.semaphore-scripts';
import { LockEngine } from '../../lib/core/lock-engine';
import { newOwnerToken } from '../../lib/core/acquire/owner-token';
import { BENCH_TTL_MS, BENCH_WAIT_MS, redisClient } from './bench.contenders';
import type { BenchContext } from './bench.context';
import { sleep, summarize, type Summary } from './bench.stats';

/**
 * Semaphore rows (`--scenarios=semaphore`, Redis only): ours (native permits, `permits: 3`) against
 * redis-semaphore 5.8's `Semaphore` (limit 3, its defaults: lockTimeout 10 s, polls every 10 ms
 * for up to 10 s), on the same private server, alternating windows.
 * - uncontended: one client, acquire + release in a loop (cycles/s, cycle latency), each round's
 *   window cut into slices the rows take in turn (the order reversed every other slice); beside
 *   the two libraries, `scripts-only`: the two calls our Redis semaphore sends per uncontended
 *   cycle (the free-permit script SEM_PERMIT_FREE, then the release's plain ZREM; the same keys and
 *   arguments, a new owner token each) through the same client with none of our JavaScript
 *   around them. No library code over these scripts can be faster than that row: it is the
 *   ceiling of ours. And `their-calls`, the same for theirs: the
 *   two calls its `Semaphore` makes per cycle (its acquire script, through its own helper, and a
 *   `ZREM`), without the class around them. Ours ÷ theirs is then our scripts against theirs
 *   (scripts-only ÷ their-calls) times our JavaScript against theirs.
 * - contended: 8 worker processes (this file, forked), one client each, all on one semaphore of 3:
 *   acquire (waiting), hold 1 ms, release, pause 2 ms (acquisitions/s, wait of each acquire).
 * The worker processes are started, and have loaded, before the first window. Before round 0,
 * every row runs unmeasured (`prewarm`): uncontended PREWARM_UNCONTENDED_MS each, contended
 * PREWARM_CONTENDED_MS each, so the rounds measure code V8 has optimized, as in a server that has
 * been up a while. Without it, round 0 measured the JIT's warm-up: a contended worker does ~150
 * acquisitions/s, far too few for V8 to tier up in the 1 s warm-up of a window (ours needed ~15 s
 * to reach its steady rate; its CPU per acquisition fell from 1.9 to 0.8 ms meanwhile, theirs
 * from 1.3 to 0.7 ms). The rows are warmed alike; the report says so. Nothing asserts a time.
 * 20 s was not enough on a 2-core machine: back-to-back windows of ours went from 717 to
 * 1,540-1,610 acquisitions/s (p99 42 -> 7-8 ms, CPU 2.1 -> 0.6 ms per acquisition) over ~45 s,
 * with no deopt of ours repeated (--trace-deopt: once per worker), and the profile of a slow
 * window in baseline code (Sparkplug's LoadIC and call builtins) and TurboFan compiling: at
 * ~150 calls/s a function of the contended path needs tens of seconds of calls to be optimized,
 * and its compile jobs share the 2 cores with 8 workers. A run with 60 s gave 1,024-1,372/s and
 * p99 7.9-14.4 ms in its rounds; back-to-back windows were still improving after 60 s (1,619/s,
 * p99 4.7 ms) and barely dipped after 25 s idle. So 90 s.
 */
export const PERMITS = 3;
const PROCESSES = 8;
const HOLD_MS = 1;
const PAUSE_MS = 2;
export type Impl = 'ours' | 'redis-semaphore' | 'scripts-only' | 'their-calls';
const IMPLS: Impl[] = ['ours', 'redis-semaphore'];
/** Unmeasured running of each row before round 0 (see the comment above; quick runs: a tenth). */
const PREWARM_UNCONTENDED_MS = 2_000;
const PREWARM_CONTENDED_MS = 90_000;
/**
 * The unmeasured warm-up of each contended window. 1 s was too short: the workers sit idle
 * through each round's uncontended window (~25 s), and ours, the first contended row after it in
 * rounds 0 and 2, ran at 890-1,300/s there against 1,360-1,560/s in round 1 (after theirs), in
 * five runs out of five; with 3 s, 1,630-1,660/s in both. (Not V8's bytecode flushing: the same
 * with --no-flush-bytecode; nor this process: it used 6-17 ms of CPU per window.) Theirs, a
 * poller, moved by 5 % or less.
 */
const CONTENDED_WARM_UP_MS = 3_000;
/** Slices per round of an uncontended window, the rows taking turns (see runSemaphore). */
const UNCONTENDED_SLICES = 8;
/** The uncontended rows (the two floors need no worker: they are measured uncontended only). */
const UNCONTENDED: Impl[] = ['ours', 'scripts-only', 'their-calls', 'redis-semaphore'];

export interface SemaphoreRow {
  impl: Impl;
  perSec: number;
  latency: Summary;
}
export interface SemaphoreResult {
  permits: number;
  processes: number;
  windowMs: number;
  rounds: number;
  uncontended: SemaphoreRow[];
  contended: SemaphoreRow[];
  /**
   * ours ÷ redis-semaphore acquisitions/s; their p99 ÷ ours; scripts-only ÷ redis-semaphore
   * (uncontended: the best any code over our scripts could do); scripts-only ÷ their-calls (our
   * scripts against theirs, no library code on either side); their-calls ÷ redis-semaphore (what
   * their class costs over its calls).
   */
  ratios: {
    uncontended: number;
    contendedRate: number;
    contendedP99: number;
    scriptsOnly: number;
    scriptsVsTheirCalls: number;
    theirCalls: number;
  };
}

/** One row's client: `take` acquires a permit of `key` and answers its release. */
export interface Client {
  take(key: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** A row's own connection and code. */
export function connect(impl: Impl, port: number): Client {
  const client = redisClient(port);
  if (impl === 'scripts-only') {
    const args = (key: string) => {
      const k = semaphoreKeys(`bench:${key}`);
      return [k.permits, k.fence, k.queue, k.details] as const;
    };
    return {
      async take(key) {
        const keys = args(key);
        const owner = newOwnerToken();
        // The uncontended acquire: the short free-permit script (RedisGrants.attempt).
        const permit = [keys[0], keys[1], keys[2], owner, BENCH_TTL_MS, FENCE_RETENTION_MS];
        const reply = await runScript(client, SEM_PERMIT_FREE, 3, permit);
        if (!(Number(reply) > 0)) throw new Error(`scripts-only: not granted (${String(reply)})`);
        return async () => {
          // As the backend does: the release script only when the ZREM did not free the permit.
          if ((await client.zrem(keys[0], owner)) === 1) return;
          await runScript(client, SEM_RELEASE, 4, [
            ...keys,
            owner,
            'exclusive',
            FENCE_RETENTION_MS,
            '1',
            '0',
          ]);
        };
      },
      close: async () => void client.disconnect(),
    };
  }
  if (impl === 'their-calls') {
    return {
      async take(key) {
        const k = `rc:${key}`;
        const id = newOwnerToken();
        const reply = await acquireLua(client, [k, PERMITS, id, BENCH_TTL_MS, Date.now()]);
        if (Number(reply) !== 1) throw new Error(`their-calls: not granted (${String(reply)})`);
        return async () => void (await client.zrem(k, id));
      },
      close: async () => void client.disconnect(),
    };
  }
  if (impl === 'redis-semaphore') {
    return {
      async take(key) {
        const sem = new Semaphore(client, `rs:${key}`, PERMITS, { lockTimeout: BENCH_TTL_MS });
        await sem.acquire();
        return () => sem.release();
      },
      close: async () => void client.disconnect(),
    };
  }
  return oursOver(client);
}

/** The classes `ours` is built from (a caller may pass another copy of lib/'s). */
export interface OurClasses {
  LockEngine: typeof LockEngine;
  RedisLockBackend: typeof RedisLockBackend;
}

/**
 * The `ours` row over `client` (which it disconnects on close): a semaphore of `permits` permits,
 * or, with `permits` null, the plain lock.
 */
export function oursOver(
  client: ReturnType<typeof redisClient>,
  classes: OurClasses = { LockEngine, RedisLockBackend },
  permits: number | null = PERMITS,
): Client {
  const engine = new classes.LockEngine({
    backend: new classes.RedisLockBackend({ client }),
    keyPrefix: 'bench:',
    defaults: { ttl: BENCH_TTL_MS, wait: BENCH_WAIT_MS },
  });
  return {
    async take(key) {
      const h = await engine.acquire(key, permits === null ? undefined : { permits });
      return () => h.release();
    },
    async close() {
      await engine.close();
      client.disconnect();
    },
  };
}

/** One client's loop until `until` (performance.now); returns each acquire's (or cycle's) ms. */
async function loop(c: Client, key: string, until: number, hold: number, pause: number) {
  const samples: number[] = [];
  while (performance.now() < until) {
    const t = performance.now();
    const release = await c.take(key);
    if (hold === 0) {
      await release();
      samples.push(performance.now() - t);
      continue;
    }
    samples.push(performance.now() - t);
    await sleep(hold);
    await release();
    await sleep(pause);
  }
  return samples;
}

interface Job {
  impl: Impl;
  port: number;
  key: string;
  durationMs: number;
  warmUpMs: number;
}

/** Worker side: connect, warm up on another key, then run the measured window. */
async function workerJob(j: Job): Promise<number[]> {
  const c = connect(j.impl, j.port);
  try {
    await loop(c, `${j.key}:warm`, performance.now() + j.warmUpMs, HOLD_MS, PAUSE_MS);
    return await loop(c, j.key, performance.now() + j.durationMs, HOLD_MS, PAUSE_MS);
  } finally {
    await c.close();
  }
}

/**
 * Forks the workers and resolves once each has loaded (compiling this file in 8 processes at
 * once took both cores for seconds; before, that landed in the first uncontended window).
 */
async function startWorkers(): Promise<ChildProcess[]> {
  const workers = Array.from({ length: PROCESSES }, () =>
    fork(__filename, ['--semaphore-worker'], {
      execArgv: ['-r', 'ts-node/register/transpile-only'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve, reject) => {
          w.once('message', () => resolve());
          w.once('exit', (code) => reject(new Error(`worker exited (${code}) while loading`)));
        }),
    ),
  );
  for (const w of workers) w.removeAllListeners('exit');
  return workers;
}

function runOn(child: ChildProcess, job: Job): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { samples?: number[]; error?: string }) => {
      child.off('exit', onExit);
      if (m.error) reject(new Error(m.error));
      else resolve(m.samples ?? []);
    };
    const onExit = (code: number | null) => reject(new Error(`worker exited (${code})`));
    child.once('message', onMessage);
    child.once('exit', onExit);
    child.send(job);
  });
}

/**
 * Runs every row unmeasured before round 0 (in this process, uncontended; in the workers,
 * contended), so that the rounds measure optimized code (see the comment at the top).
 */
async function prewarm(workers: ChildProcess[], port: number, divisor: number): Promise<void> {
  for (const impl of UNCONTENDED) {
    const c = connect(impl, port);
    await loop(c, `prewarm:${impl}`, performance.now() + PREWARM_UNCONTENDED_MS / divisor, 0, 0);
    await c.close();
  }
  for (const impl of IMPLS) {
    const durationMs = PREWARM_CONTENDED_MS / divisor;
    const job = { impl, port, key: `prewarm:${impl}`, durationMs, warmUpMs: 0 };
    await Promise.all(workers.map((w) => runOn(w, job)));
  }
}

function row(impl: Impl, samples: number[], windowMs: number, rounds: number): SemaphoreRow {
  return {
    impl,
    perSec: samples.length / ((windowMs * rounds) / 1000),
    latency: summarize(samples),
  };
}

export async function runSemaphore(ctx: BenchContext): Promise<SemaphoreResult> {
  await ctx.servers.need('redis');
  const port = ctx.servers.redis!.port;
  const rounds = ctx.quick ? 2 : 3;
  const windowMs = ctx.quick ? 1_000 : 4_000;
  const warmUpMs = ctx.quick ? 300 : 1_000;
  const contendedWarmUpMs = ctx.quick ? 300 : CONTENDED_WARM_UP_MS;
  const un = new Map<Impl, number[]>(UNCONTENDED.map((i) => [i, []]));
  const co = new Map<Impl, number[]>(IMPLS.map((i) => [i, []]));
  const workers = await startWorkers();
  try {
    await prewarm(workers, port, ctx.quick ? 10 : 1);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? IMPLS : [...IMPLS].reverse();
      const rotate = round % UNCONTENDED.length;
      const unOrder = [...UNCONTENDED.slice(rotate), ...UNCONTENDED.slice(0, rotate)];
      // Each round's uncontended window is cut into UNCONTENDED_SLICES slices taken in turn by
      // the rows (one connection each, warmed up first), so a change of the machine's load hits
      // every row alike instead of one row's whole window. Every other slice takes them in
      // reverse order: a row then follows each of its two neighbours equally often. (In a fixed
      // cyclic order each row always followed the same one and paid part of its garbage: the row
      // after redis-semaphore's class, which allocates the most, was ours.)
      const clients = new Map<Impl, Client>();
      for (const impl of unOrder) {
        const c = connect(impl, port);
        await loop(c, `u${round}:warm`, performance.now() + warmUpMs, 0, 0);
        clients.set(impl, c);
      }
      const counts = new Map<Impl, number>(unOrder.map((i) => [i, 0]));
      for (let slice = 0; slice < UNCONTENDED_SLICES; slice++) {
        for (const impl of slice % 2 === 0 ? unOrder : [...unOrder].reverse()) {
          const sliceMs = windowMs / UNCONTENDED_SLICES;
          const s = await loop(
            clients.get(impl)!,
            `u${round}:${impl}`,
            performance.now() + sliceMs,
            0,
            0,
          );
          un.get(impl)!.push(...s);
          counts.set(impl, counts.get(impl)! + s.length);
        }
      }
      for (const impl of unOrder) {
        await clients.get(impl)!.close();
        ctx.log(
          `semaphore uncontended ${impl} round ${round}: ${(counts.get(impl)! / (windowMs / 1000)).toFixed(0)}/s`,
        );
      }
      for (const impl of order) {
        const key = `c${round}:${impl}`;
        const job = { impl, port, key, durationMs: windowMs, warmUpMs: contendedWarmUpMs };
        const all = (await Promise.all(workers.map((w) => runOn(w, job)))).flat();
        co.get(impl)!.push(...all);
        const p99 = summarize(all).p99;
        ctx.log(
          `semaphore contended ${impl} round ${round}: ${(all.length / (windowMs / 1000)).toFixed(0)}/s, p99 wait ${p99.toFixed(1)} ms`,
        );
      }
    }
  } finally {
    for (const w of workers) w.kill();
  }
  const uncontended = UNCONTENDED.map((i) => row(i, un.get(i)!, windowMs, rounds));
  const contended = IMPLS.map((i) => row(i, co.get(i)!, windowMs, rounds));
  const rate = (impl: Impl) => uncontended.find((r) => r.impl === impl)!.perSec;
  const result: SemaphoreResult = {
    permits: PERMITS,
    processes: PROCESSES,
    windowMs,
    rounds,
    uncontended,
    contended,
    ratios: {
      uncontended: rate('ours') / rate('redis-semaphore'),
      contendedRate: contended[0].perSec / contended[1].perSec,
      contendedP99: contended[1].latency.p99 / contended[0].latency.p99,
      scriptsOnly: rate('scripts-only') / rate('redis-semaphore'),
      scriptsVsTheirCalls: rate('scripts-only') / rate('their-calls'),
      theirCalls: rate('their-calls') / rate('redis-semaphore'),
    },
  };
  ctx.log(`semaphore ratios (ours vs redis-semaphore): ${JSON.stringify(result.ratios)}`);
  return result;
}

if (process.argv.includes('--semaphore-worker') && process.send) {
  process.send({ ready: true });
  process.on('message', (job: Job) => {
    workerJob(job).then(
      (samples) => process.send!({ samples }),
      (error: unknown) => process.send!({ error: String(error) }),
    );
  });
}

/** The Markdown section of a run's report. */
export function semaphoreSection(r: SemaphoreResult): string {
  const line = (label: string, rows: SemaphoreRow[]) =>
    rows.map(
      (x) =>
        `| ${label} | ${x.impl} | ${x.perSec.toFixed(0)} | ${x.latency.median.toFixed(2)} | ${x.latency.p99.toFixed(1)} | ${x.latency.n} |`,
    );
  return [
    '',
    `## Semaphore (Redis, permits ${r.permits}; ${r.rounds} rounds of ${r.windowMs} ms, alternating)`,
    '',
    "Uncontended: one client, acquire + release (latency = the cycle); each round's window in " +
      `${UNCONTENDED_SLICES} slices, the rows taking turns. Before round 0 each row ran unmeasured ` +
      `(${PREWARM_UNCONTENDED_MS / 1000} s uncontended, ${PREWARM_CONTENDED_MS / 1000} s contended; ` +
      `quick runs a tenth), so V8 had optimized every row's code. Contended: ` +
      `${r.processes} processes, hold ${HOLD_MS} ms, pause ${PAUSE_MS} ms (latency = each acquire's wait), ` +
      `each window after ${CONTENDED_WARM_UP_MS / 1000} s unmeasured on another key (quick runs 0.3 s).`,
    '',
    '| row | contender | acquisitions/s | median ms | p99 ms | samples |',
    '| :-- | :-- | --: | --: | --: | --: |',
    ...line('uncontended', r.uncontended),
    ...line('contended', r.contended),
    '',
    `Ours ÷ redis-semaphore: uncontended ${r.ratios.uncontended.toFixed(2)}×, contended ` +
      `${r.ratios.contendedRate.toFixed(2)}×; their p99 wait ÷ ours ${r.ratios.contendedP99.toFixed(2)}×. ` +
      `scripts-only (our two calls, the acquire script and the release as the backend sends it, ` +
      `with no JavaScript of ours around them: the ceiling of any library over them) ÷ ` +
      `redis-semaphore: ${r.ratios.scriptsOnly.toFixed(2)}×. ` +
      `Their calls alone (its acquire script and ZREM, no class) ÷ redis-semaphore: ` +
      `${r.ratios.theirCalls.toFixed(2)}×; our calls ÷ their calls: ` +
      `${r.ratios.scriptsVsTheirCalls.toFixed(2)}×.`,
    '',
  ].join('\n');
}
