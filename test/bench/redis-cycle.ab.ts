import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

/**
 * Diagnosis (not a test; nothing asserts a time): the JavaScript of an uncontended Redis cycle,
 * `acquire` + `release` through the engine, semaphore (`permits: 3`) and plain lock, with a stub
 * client that answers every script at once (no network, no ioredis), this tree against another
 * tree's `lib` (LIB_BASE, e.g. `git archive <commit> lib | tar -x -C /tmp/base`,
 * LIB_BASE=/tmp/base/lib). Two numbers per configuration:
 * - CPU µs per cycle (process.cpuUsage), configurations interleaved round by round, median;
 * - bytes allocated per cycle, from V8's sampling heap profiler with collected objects kept
 *   (every 128 bytes sampled): deterministic where CPU is not, and GC is a third of the cycle.
 *
 * A third row, theirs-sem, is redis-semaphore's `Semaphore` (limit 3) over the same stub: the
 * JavaScript a cycle of theirs costs.
 *
 *   LIB_BASE=/tmp/base/lib npx ts-node --transpile-only test/bench/redis-cycle.ab.ts [rounds=9]
 *   (BY_FUNCTION=1 lists where each configuration's bytes are allocated)
 *
 * COLD_MB=8: instead, each cycle runs after touching every cache line of an 8 MB buffer, and only
 * the cycle is timed (wall µs, median of rounds). Over a real server the caches are cold like
 * that at every step (the kernel, ioredis and redis-server ran in between), and there a deep path
 * costs far more than its warm CPU says: in round 7 the engine was cheaper than their class warm
 * but not cold (docs/benchmarks.md).
 */
type Cycle = () => Promise<void>;

const stub = () => ({
  isCluster: false,
  // The lock's acquire script answers its token (a string); the semaphore's, its token (an
  // integer; before 2026-12-01 it answered {1, token}: give LIB_BASE trees of then [1, '5']).
  // Any other script answers 1: a release, and the semaphore's free-seat script (a token).
  evalsha: (_sha: string, numKeys: number, ...args: unknown[]) =>
    Promise.resolve(
      args.includes('wait') || args.includes('try')
        ? numKeys === 5
          ? '5'
          : process.env.SEM_REPLY === 'array'
            ? [1, '5']
            : 5
        : 1,
    ),
  eval: () => Promise.resolve(1),
  // The semaphore's release (since 2026-12-01; LIB_BASE trees of before send a script instead).
  zrem: () => Promise.resolve(1),
  pipeline: () => ({}),
  duplicate: () => ({
    subscribe: () => Promise.resolve(1),
    on(event: string, cb: () => void) {
      if (event === 'ready') setImmediate(cb);
    },
    disconnect: () => undefined,
  }),
});

function cycle(lib: string, permits?: number): Cycle {
  const { RedisLockBackend } = require(`${lib}/backends/redis/redis.backend`);
  const { LockEngine } = require(`${lib}/core/lock-engine`);
  const engine = new LockEngine({
    backend: new RedisLockBackend({ client: stub() }),
    keyPrefix: 'ab:',
    defaults: { ttl: 10_000, wait: 10_000 },
  });
  const options = permits ? { permits } : undefined;
  return async () => {
    const handle = await engine.acquire('k', options && { ...options });
    await handle.release();
  };
}

/** redis-semaphore's `Semaphore` (limit 3) over the same kind of stub: its JavaScript alone. */
function theirs(): Cycle {
  const { Semaphore } = require('redis-semaphore');
  const client = { ...stub(), zrem: () => Promise.resolve(1) };
  return async () => {
    const sem = new Semaphore(client, 'rs:k', 3, { lockTimeout: 10_000 });
    await sem.acquire();
    await sem.release();
  };
}

interface SampleNode {
  selfSize: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: SampleNode[];
}

/**
 * Bytes allocated per cycle; with BY_FUNCTION=1 also the 8 functions that allocate the most per
 * cycle (where they run, not who called them: V8 attributes inlined callees to their caller).
 */
async function bytesPerCycle(run: Cycle, cycles: number): Promise<[number, string[]]> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 128,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
  for (let i = 0; i < cycles; i++) await run();
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  let total = 0;
  const byFunction = new Map<string, number>();
  const walk = (n: SampleNode) => {
    total += n.selfSize;
    const where = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/.*\/(lib|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
    byFunction.set(where, (byFunction.get(where) ?? 0) + n.selfSize);
    n.children.forEach(walk);
  };
  walk(profile.head as unknown as SampleNode);
  const top = process.env.BY_FUNCTION
    ? [...byFunction]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 8)
        .map(([where, bytes]) => `  ${(bytes / cycles).toFixed(0).padStart(6)} bytes  ${where}`)
    : [];
  return [total / cycles, top];
}

/** Wall µs of a cycle run after evicting the caches (COLD_MB, see the header), median of rounds. */
async function coldCycles(configs: [string, Cycle][], rounds: number, mb: number): Promise<void> {
  const junk = new Uint8Array(mb << 20);
  let sink = 0;
  const cold = new Map<string, number[]>(configs.map(([n]) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of configs) {
      let total = 0;
      for (let i = 0; i < 2_000; i++) {
        for (let j = 0; j < junk.length; j += 64) sink += junk[j]++;
        const t0 = performance.now();
        await run();
        total += performance.now() - t0;
      }
      cold.get(name)!.push((total * 1000) / 2_000);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`${rounds} rounds x 2000 cycles, ${mb} MB evicted before each (${sink > 0})`);
  for (const [name, xs] of cold)
    console.log(`${name.padEnd(10)} cold ${median(xs).toFixed(2).padStart(6)} µs/cycle`);
}

async function main(rounds: number): Promise<void> {
  const here = join(__dirname, '..', '..', 'lib');
  const libs: [string, string][] = [['this', here]];
  if (process.env.LIB_BASE) libs.unshift(['base', process.env.LIB_BASE]);
  const configs: [string, Cycle][] = libs.flatMap(([name, lib]): [string, Cycle][] => [
    [`${name}-sem`, cycle(lib, 3)],
    [`${name}-lock`, cycle(lib)],
  ]);
  configs.push(['theirs-sem', theirs()]);
  const cycles = 30_000;
  for (const [, run] of configs) for (let i = 0; i < 20_000; i++) await run();
  if (process.env.COLD_MB) return coldCycles(configs, rounds, Number(process.env.COLD_MB));
  const cpu = new Map<string, number[]>(configs.map(([n]) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < configs.length; j++) {
      const [name, run] = configs[(r + j) % configs.length];
      const u0 = process.cpuUsage();
      for (let i = 0; i < cycles; i++) await run();
      const u = process.cpuUsage(u0);
      cpu.get(name)!.push((u.user + u.system) / cycles);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`${rounds} rounds x ${cycles} cycles; load ${require('node:os').loadavg()[0]}`);
  for (const [name, run] of configs) {
    const [bytes, top] = await bytesPerCycle(run, 20_000);
    console.log(
      `${name.padEnd(10)} CPU ${median(cpu.get(name)!).toFixed(2).padStart(6)} µs/cycle   ` +
        `${bytes.toFixed(0).padStart(6)} bytes/cycle`,
    );
    for (const line of top) console.log(line);
  }
}

main(Number(process.argv[2] ?? 9)).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
