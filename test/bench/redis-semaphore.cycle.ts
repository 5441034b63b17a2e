import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Semaphore } from 'redis-semaphore';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { RedisServer } from '../support/redis-server';
import { BENCH_TTL_MS, BENCH_WAIT_MS, redisClient } from './bench.contenders';
import { median } from './bench.stats';

/**
 * Diagnosis (not a test; nothing asserts a time): the uncontended acquire + release cycle of a
 * Redis semaphore (limit 3) on a private redis-server, in one process, configurations interleaved
 * round by round (rotating order) so the machine's load hits each alike. Per configuration, the
 * median over rounds of: client CPU µs per cycle (process.cpuUsage), server commands per cycle and
 * server µs per cycle (INFO commandstats deltas: the scripts' own time, usec).
 *   ours-sem        - LockEngine.acquire(key, { permits: 3 }) + release (what users get)
 *   ours-lock       - LockEngine.acquire(key) + release (the plain lock, same engine)
 *   redis-semaphore - redis-semaphore 5.8 `Semaphore` (limit 3), acquire + release
 *   base-sem        - ours-sem built from another tree, when LIB_BASE names its lib folder
 *                     (e.g. `git archive <commit> lib | tar -x -C /tmp/base`, LIB_BASE=/tmp/base/lib)
 *
 *   npx ts-node --transpile-only test/bench/redis-semaphore.cycle.ts [rounds=10] [cycles=1000]
 *   (CONFIGS=ours-sem limits the run to the named configurations; CPU_PROFILE=file.cpuprofile
 *   writes a V8 CPU profile of the measured rounds, for chrome://inspect or a script)
 */
interface Take {
  (key: string): Promise<() => Promise<void>>;
}
interface Config {
  name: string;
  take: Take;
  close(): Promise<void>;
}

function engineConfig(
  name: string,
  port: number,
  lib: { RedisLockBackend: typeof RedisLockBackend; LockEngine: typeof LockEngine },
  permits?: number,
): Config {
  const client = redisClient(port);
  const engine = new lib.LockEngine({
    backend: new lib.RedisLockBackend({ client }),
    keyPrefix: `${name}:`,
    defaults: { ttl: BENCH_TTL_MS, wait: BENCH_WAIT_MS },
  });
  return {
    name,
    async take(key) {
      const h = await engine.acquire(key, permits ? { permits } : undefined);
      return () => h.release();
    },
    async close() {
      await engine.close();
      client.disconnect();
    },
  };
}

function theirs(port: number): Config {
  const client = redisClient(port);
  return {
    name: 'redis-semaphore',
    async take(key) {
      const sem = new Semaphore(client, `rs:${key}`, 3, { lockTimeout: BENCH_TTL_MS });
      await sem.acquire();
      return () => sem.release();
    },
    close: async () => void client.disconnect(),
  };
}

/** Total calls and usec of every command so far (INFO commandstats). */
function commandStats(server: RedisServer): { calls: number; usec: number; per: string } {
  let calls = 0;
  let usec = 0;
  const per: string[] = [];
  for (const line of server.cli('INFO', 'commandstats').split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (!m || m[1] === 'info') continue;
    calls += Number(m[2]);
    usec += Number(m[3]);
    per.push(`${m[1]}=${m[2]}`);
  }
  return { calls, usec, per: per.join(' ') };
}

async function main(rounds: number, cycles: number): Promise<void> {
  const server = await RedisServer.start();
  const configs = [
    engineConfig('ours-sem', server.port, { RedisLockBackend, LockEngine }, 3),
    engineConfig('ours-lock', server.port, { RedisLockBackend, LockEngine }),
    theirs(server.port),
  ];
  if (process.env.LIB_BASE) {
    const base = process.env.LIB_BASE;

    const lib = {
      RedisLockBackend: require(`${base}/backends/redis/redis.backend`).RedisLockBackend,
      LockEngine: require(`${base}/core/lock-engine`).LockEngine,
    };

    configs.push(engineConfig('base-sem', server.port, lib, 3));
  }
  // CONFIGS=ours-sem,ours-lock runs only those (e.g. under node --cpu-prof).
  const only = process.env.CONFIGS?.split(',');
  if (only) configs.splice(0, configs.length, ...configs.filter((c) => only.includes(c.name)));
  const cpu: Record<string, number[]> = {};
  const cmds: Record<string, number[]> = {};
  const usec: Record<string, number[]> = {};
  const rate: Record<string, number[]> = {};
  try {
    for (const c of configs) {
      for (let i = 0; i < cycles / 4; i++) await (await c.take('warm'))();
      cpu[c.name] = [];
      cmds[c.name] = [];
      usec[c.name] = [];
      rate[c.name] = [];
    }
    const load0 = (await import('node:os')).loadavg();
    const profiler = process.env.CPU_PROFILE ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
    }
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < configs.length; j++) {
        const c = configs[(r + j) % configs.length];
        const s0 = commandStats(server);
        const t0 = performance.now();
        const u0 = process.cpuUsage();
        for (let i = 0; i < cycles; i++) await (await c.take(`k${r}`))();
        const u = process.cpuUsage(u0);
        const wall = performance.now() - t0;
        const s1 = commandStats(server);
        cpu[c.name].push((u.user + u.system) / cycles);
        cmds[c.name].push((s1.calls - s0.calls) / cycles);
        usec[c.name].push((s1.usec - s0.usec) / cycles);
        rate[c.name].push((cycles / wall) * 1000);
        if (r === 0) console.log(`${c.name}: ${s1.per}`);
      }
    }
    const load1 = (await import('node:os')).loadavg();
    if (profiler) {
      const { profile } = await profiler.post('Profiler.stop');
      writeFileSync(process.env.CPU_PROFILE!, JSON.stringify(profile));
      profiler.disconnect();
    }
    console.log(
      `${rounds} rounds x ${cycles} cycles; load ${load0.map((l) => l.toFixed(1)).join(' ')} -> ${load1.map((l) => l.toFixed(1)).join(' ')}`,
    );
    for (const c of configs) {
      console.log(
        `${c.name.padEnd(16)} client CPU ${median(cpu[c.name]).toFixed(0).padStart(5)} µs/cycle  server ${median(usec[c.name]).toFixed(1).padStart(6)} µs/cycle  commands ${median(cmds[c.name]).toFixed(2)}/cycle  ${median(rate[c.name]).toFixed(0).padStart(6)} cycles/s (wall, load-sensitive)`,
      );
    }
  } finally {
    for (const c of configs) await c.close();
    await server.destroy();
  }
}

main(Number(process.argv[2] ?? 10), Number(process.argv[3] ?? 1000)).catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
