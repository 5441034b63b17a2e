import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { RedisLockBackend, type RedisClientLike } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { redisClient } from './bench.contenders';
import type { BenchContext } from './bench.context';
import { inParallel, sleep } from './bench.stats';

/**
 * Scenario 4, watchdog scale: N locks held at once by one process on Redis, renewed by the
 * watchdog (one timer per backend, batched renew()). A counting wrapper around the ioredis client
 * records every pipeline the backend sends; CPU is process.cpuUsage() over whole renewal periods
 * with nothing else running; a counting wrapper around the backend groups renew() calls into ticks;
 * memory is the heap growth after a forced GC, divided by N (it
 * includes the LockHandle the caller keeps), and Redis's own used_memory growth.
 */
export interface WatchdogRow {
  locks: number;
  ttlMs: number;
  acquireSeconds: number;
  windowMs: number;
  /** Watchdog ticks seen in the window: renew() calls made in the same event-loop turn are one tick. */
  ticks: number;
  ticksPerPeriod: number;
  /** backend.renew() calls (batches, at most 5,000 locks each) per tick. */
  batchesPerTick: number;
  /** Pipelines (round trips) the backend sent per batch (1; 2 only after a cold script cache). */
  pipelinesPerBatch: number;
  /** Pipelines per tick: written back to back on the one connection. */
  pipelinesPerTick: number;
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

interface Batch {
  at: number;
  turn: number;
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
  const batches: Batch[] = [];
  const backend = countingBackend(new RedisLockBackend({ client: counting }), batches);
  const engine = new LockEngine({ backend, keyPrefix: `wd${n}:`, defaults: { ttl, wait: 0 } });
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
    ctx.log(
      `watchdog ${n}: acquired in ${acquireSeconds.toFixed(1)} s; ${heapBytesPerLock.toFixed(0)} B heap/lock; measuring ${((2 * period) / 1000).toFixed(0)} s`,
    );
    // Let every lock pass its first renewal, then measure two whole periods.
    await sleep(period + 200);
    const windowMs = 2 * period;
    const from = performance.now();
    const cpu0 = process.cpuUsage();
    await sleep(windowMs);
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - from;
    const inWindow = pipes.filter((p) => p.at >= from && p.at < from + wall);
    const batchesIn = batches.filter((b) => b.at >= from && b.at < from + wall);
    const ticks = new Set(batchesIn.map((b) => b.turn)).size;
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
      ticks,
      ticksPerPeriod: ticks / (wall / period),
      batchesPerTick: ticks ? batchesIn.length / ticks : 0,
      pipelinesPerBatch: batchesIn.length ? inWindow.length / batchesIn.length : 0,
      pipelinesPerTick: ticks ? inWindow.length / ticks : 0,
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

/**
 * Delegates to the backend and records every renew() call. The watchdog issues all batches of one
 * tick synchronously in one timer callback, so calls seen before the next setImmediate share a turn.
 */
function countingBackend(backend: LockBackend, batches: Batch[]): LockBackend {
  let turn = 0;
  let open = false;
  return {
    name: backend.name,
    capabilities: backend.capabilities,
    tryAcquire: (request) => backend.tryAcquire(request),
    leave: backend.leave?.bind(backend),
    wakeups: backend.wakeups,
    waitPolicy: backend.waitPolicy,
    release: (lock) => backend.release(lock),
    close: () => backend.close(),
    renew(locks) {
      if (!open) {
        open = true;
        turn++;
        setImmediate(() => (open = false));
      }
      batches.push({ at: performance.now(), turn });
      return backend.renew(locks);
    },
  };
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
