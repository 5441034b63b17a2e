import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { RedisLockBackend, type RedisClientLike } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lock-handle';
import { redisClient } from './bench.contenders';
import type { BenchContext } from './bench.context';
import { inParallel, sleep } from './bench.stats';

/**
 * Scenario 4, watchdog scale: N locks held at once by one process on Redis, renewed by the
 * watchdog (one timer per backend, batched renew()). A counting wrapper around the ioredis client
 * records every pipeline the backend sends; CPU is process.cpuUsage() over whole renewal periods
 * with nothing else running; memory is the heap growth after a forced GC, divided by N (it
 * includes the LockHandle the caller keeps), and Redis's own used_memory growth.
 */
export interface WatchdogRow {
  locks: number;
  ttlMs: number;
  acquireSeconds: number;
  windowMs: number;
  /** Renewal bursts (pipelines sent within 20 ms of each other) seen in the window. */
  ticks: number;
  ticksPerPeriod: number;
  pipelinesPerTick: number;
  maxPipelinesPerTick: number;
  commandsPerPipeline: number;
  renewalsPerSec: number;
  cpuPercentOfCore: number;
  /** CPU % of a core per 1,000 renewals/s: scales the result to another ttl. */
  cpuPer1kRenewalsPerSec: number;
  heapBytesPerLock: number;
  redisBytesPerLock: number;
  lost: number;
}

export interface WatchdogResult {
  rows: WatchdogRow[];
}

interface Pipe {
  at: number;
  commands: number;
}

export async function runWatchdog(ctx: BenchContext): Promise<WatchdogResult> {
  await ctx.servers.need('redis');
  const sizes = ctx.quick ? [10_000] : [10_000, 100_000];
  // Full run: the default ttl (30 s, a renewal every 10 s). Quick run: 3 s so a window is short.
  const ttl = ctx.quick ? 3_000 : 30_000;
  const rows: WatchdogRow[] = [];
  for (const n of sizes) rows.push(await holdMany(ctx, n, ttl));
  return { rows };
}

async function holdMany(ctx: BenchContext, n: number, ttl: number): Promise<WatchdogRow> {
  const gc = exposeGc();
  const client = redisClient(ctx.servers.redis!.port);
  const pipes: Pipe[] = [];
  const counting = countingClient(client as unknown as RedisClientLike, pipes);
  const engine = new LockEngine({ backend: new RedisLockBackend({ client: counting }), keyPrefix: `wd${n}:`, defaults: { ttl, wait: 0 } });
  const period = ttl / 3;
  try {
    await client.flushall();
    const redisBefore = await usedMemory(client);
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const handles: LockHandle[] = new Array(n);
    const t0 = performance.now();
    await inParallel(n, 256, async (i) => {
      handles[i] = await engine.acquire(`k:${i}`);
    });
    const acquireSeconds = (performance.now() - t0) / 1000;
    gc();
    const heapBytesPerLock = (process.memoryUsage().heapUsed - heapBefore) / n;
    const redisBytesPerLock = ((await usedMemory(client)) - redisBefore) / n;
    ctx.log(`watchdog ${n}: acquired in ${acquireSeconds.toFixed(1)} s; ${heapBytesPerLock.toFixed(0)} B heap/lock; measuring ${((2 * period) / 1000).toFixed(0)} s`);
    // Let every lock pass its first renewal, then measure two whole periods.
    await sleep(period + 200);
    const windowMs = 2 * period;
    const from = performance.now();
    const cpu0 = process.cpuUsage();
    await sleep(windowMs);
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - from;
    const inWindow = pipes.filter((p) => p.at >= from && p.at < from + wall);
    const bursts = burstsOf(inWindow);
    const commands = inWindow.reduce((s, p) => s + p.commands, 0);
    const renewalsPerSec = commands / (wall / 1000);
    const cpuPercentOfCore = ((cpu.user + cpu.system) / 1000 / wall) * 100;
    const lost = handles.filter((h) => !h.held).length;
    await inParallel(n, 256, async (i) => handles[i].release().catch(() => undefined));
    return {
      locks: n,
      ttlMs: ttl,
      acquireSeconds,
      windowMs: wall,
      ticks: bursts.length,
      ticksPerPeriod: bursts.length / (wall / period),
      pipelinesPerTick: bursts.length ? inWindow.length / bursts.length : 0,
      maxPipelinesPerTick: Math.max(0, ...bursts),
      commandsPerPipeline: inWindow.length ? commands / inWindow.length : 0,
      renewalsPerSec,
      cpuPercentOfCore,
      cpuPer1kRenewalsPerSec: renewalsPerSec ? cpuPercentOfCore / (renewalsPerSec / 1000) : NaN,
      heapBytesPerLock,
      redisBytesPerLock,
      lost,
    };
  } finally {
    await engine.close();
    client.disconnect();
  }
}

/** Delegates to the real client and records every pipeline exec (time sent, commands in it). */
function countingClient(client: RedisClientLike, pipes: Pipe[]): RedisClientLike {
  return {
    evalsha: (...a) => client.evalsha(...a),
    eval: (...a) => client.eval(...a),
    duplicate: () => client.duplicate(),
    pipeline() {
      const pipe = client.pipeline();
      let commands = 0;
      return {
        evalsha(...a: Parameters<RedisClientLike['evalsha']>) {
          commands++;
          return pipe.evalsha(...a);
        },
        eval(...a: Parameters<RedisClientLike['eval']>) {
          commands++;
          return pipe.eval(...a);
        },
        exec() {
          pipes.push({ at: performance.now(), commands });
          return pipe.exec();
        },
      };
    },
  };
}

/** Pipelines sent within 20 ms of the previous one belong to the same watchdog tick. */
function burstsOf(pipes: Pipe[]): number[] {
  const sizes: number[] = [];
  let last = -Infinity;
  for (const p of pipes) {
    if (p.at - last > 20) sizes.push(0);
    sizes[sizes.length - 1]++;
    last = p.at;
  }
  return sizes;
}

async function usedMemory(client: { info(section: string): Promise<string> }): Promise<number> {
  return Number((await client.info('memory')).match(/used_memory:(\d+)/)?.[1] ?? NaN);
}

/** global.gc without a node flag (V8 honours --expose-gc for contexts created afterwards). */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => {
    gc();
    gc();
  };
}
