/**
 * Micro-bench (not a spec: run by hand, prints a table; speed is never asserted): the engine's
 * uncontended cycle, `acquire` + `release` of one key on a MemoryLockBackend, in this process.
 * CPU µs per cycle from process.cpuUsage (CPU time, not wall time: on a loaded machine wall time
 * measures the neighbours), CYCLES cycles per round, ROUNDS rounds per configuration, median.
 *
 * Configurations, interleaved round by round in a shuffled order so the machine's load hits each
 * alike:
 *   this        - this tree's engine, the module's default wait (10 s: the waiting path)
 *   this-wait0  - this tree's engine, `wait: 0` (one attempt, no line)
 *   this-native - this tree's engine over a memory backend with a native queued wait (`acquire`,
 *                 shaped like Redis's: first attempt without reading the signal), the default wait
 *   base, base-wait0, base-native - the same against another build of the library, when LIB_BASE names it
 *                 (e.g. a `tsc` build of an earlier commit: `LIB_BASE=/tmp/base/dist/lib`)
 *
 * Usage: npx ts-node --transpile-only test/bench/engine-cycle.ts [cycles=20000] [rounds=5]
 */
import { LockEngine, MemoryLockBackend } from '../../lib';

interface Engine {
  acquire(key: string, o?: object): Promise<{ release(): Promise<void> }>;
  close(): Promise<void>;
}
interface Library {
  LockEngine: new (o: object) => Engine;
  MemoryLockBackend: new () => object;
}
interface Attempt {
  acquired: boolean;
}
interface Tries {
  tryAcquire(request: object): Promise<Attempt>;
}

/** lib's memory backend plus a native wait: one attempt, then (busy) wait until the signal aborts. */
function nativeBackend(lib: Library): object {
  const Base = lib.MemoryLockBackend as unknown as new () => Tries;
  class Native extends Base {
    async acquire(request: { signal: AbortSignal }): Promise<Attempt> {
      const first = await this.tryAcquire(request);
      if (first.acquired) return first;
      const signal = request.signal;
      if (!signal.aborted)
        await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      return { acquired: false };
    }
  }
  return new Native();
}

async function round(engine: Engine, n: number, options?: object): Promise<number> {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const h = await engine.acquire('bench:cycle', options);
    await h.release();
  }
  const used = process.cpuUsage(t);
  return (used.user + used.system) / n;
}

async function main(): Promise<void> {
  const cycles = Number(process.argv[2] ?? 20_000);
  const rounds = Number(process.argv[3] ?? 5);
  const libraries: Record<string, Library> = {
    this: { LockEngine, MemoryLockBackend } as unknown as Library,
  };
  if (process.env.LIB_BASE) libraries.base = require(process.env.LIB_BASE) as Library;
  const configs: Record<string, { engine: Engine; options?: object }> = {};
  for (const [name, lib] of Object.entries(libraries)) {
    configs[name] = { engine: new lib.LockEngine({ backend: new lib.MemoryLockBackend() }) };
    configs[`${name}-wait0`] = {
      engine: new lib.LockEngine({ backend: new lib.MemoryLockBackend() }),
      options: { wait: 0 },
    };
    configs[`${name}-native`] = { engine: new lib.LockEngine({ backend: nativeBackend(lib) }) };
  }
  const names = Object.keys(configs);
  const results: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  for (const name of names) await round(configs[name].engine, cycles / 4, configs[name].options);
  for (let r = 0; r < rounds; r++) {
    for (const name of [...names].sort(() => Math.random() - 0.5)) {
      const { engine, options } = configs[name];
      results[name].push(await round(engine, cycles, options));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `memory engine cycle (acquire + release), ${cycles} cycles x ${rounds} rounds, CPU µs per cycle`,
  );
  console.log('  config        median   rounds');
  for (const name of names)
    console.log(
      `  ${name.padEnd(12)} ${median(results[name]).toFixed(2).padStart(7)}   ${results[name].map((x) => x.toFixed(1)).join(' ')}`,
    );
  for (const { engine } of Object.values(configs)) await engine.close();
}

void main();
