import { Semaphore } from 'redis-semaphore';
import { acquireLua } from 'redis-semaphore/lib/semaphore/acquire/lua';
import { runScript } from '../../lib/backends/redis-client';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { DEFAULT_FENCE_RETENTION_MS } from '../../lib/backends/redis/redis.options';
import {
  SEM_ACQUIRE,
  SEM_RELEASE,
  semaphoreKeys,
} from '../../lib/backends/redis/redis.semaphore-scripts';
import { LockEngine } from '../../lib/core/lock-engine';
import { newOwnerToken } from '../../lib/core/owner-token';
import { RedisServer } from '../support/redis-server';
import { BENCH_TTL_MS, BENCH_WAIT_MS, redisClient } from './bench.contenders';
import { median } from './bench.stats';

/**
 * Diagnosis (not a test; nothing asserts a time): where an uncontended Redis semaphore cycle
 * (acquire + release, permits 3, one client, one private redis-server) spends its CPU, layer by
 * layer, against redis-semaphore's: per cycle, the client's CPU (process.cpuUsage: our code,
 * ioredis and the syscalls), the server's (INFO cpu) and the wall time, each layer's median over
 * slices taken in turn (the order reversed every other slice).
 * - engine: LockEngine.acquire + handle.release (what an application calls);
 * - backend: RedisLockBackend.acquire + release alone (no engine);
 * - calls: the backend's two calls alone (its acquire script, then the release it sends);
 * - their-calls: redis-semaphore's acquire script through its own helper, then its ZREM;
 * - theirs: redis-semaphore's `Semaphore` (limit 3).
 * engine − backend is the engine's cost, backend − calls the backend's, theirs − their-calls
 * their class's.
 *
 *   npx ts-node --transpile-only test/bench/redis-semaphore.layers.ts [slices=40]
 */
type Cycle = () => Promise<void>;

async function main(slices: number): Promise<void> {
  const server = await RedisServer.start();
  const client = redisClient(server.port);
  const backend = new RedisLockBackend({ client });
  const engine = new LockEngine({
    backend: new RedisLockBackend({ client }),
    keyPrefix: 'layers:',
    defaults: { ttl: BENCH_TTL_MS, wait: BENCH_WAIT_MS },
  });
  const never = new AbortController().signal;
  const k = semaphoreKeys('layers:calls');
  const keys = [k.seats, k.fence, k.queue, k.details];
  const layers: [string, Cycle][] = [
    [
      'engine',
      async () => {
        const handle = await engine.acquire('engine', { permits: 3 });
        await handle.release();
      },
    ],
    [
      'backend',
      async () => {
        const request = {
          key: 'layers:backend',
          owner: newOwnerToken(),
          mode: 'exclusive' as const,
          ttl: BENCH_TTL_MS,
          permits: 3,
          wait: BENCH_WAIT_MS,
          signal: never,
          onLost: () => undefined,
        };
        if (!(await backend.acquire(request)).acquired) throw new Error('backend: not granted');
        await backend.release(request);
      },
    ],
    [
      'calls',
      async () => {
        const owner = newOwnerToken();
        const args = [...keys, owner, BENCH_TTL_MS, 3, DEFAULT_FENCE_RETENTION_MS, 'wait'];
        const reply = await runScript(client, SEM_ACQUIRE, 4, [...args, BENCH_WAIT_MS, '', '1']);
        if (!(Number(reply) > 0)) throw new Error('calls: not granted');
        if ((await client.zrem(k.seats, owner)) === 1) return;
        await runScript(client, SEM_RELEASE, 4, [
          ...keys,
          owner,
          DEFAULT_FENCE_RETENTION_MS,
          '1',
          '0',
        ]);
      },
    ],
    [
      'their-calls',
      async () => {
        const id = newOwnerToken();
        const reply = await acquireLua(client, ['layers:rc', 3, id, BENCH_TTL_MS, Date.now()]);
        if (Number(reply) !== 1) throw new Error('their-calls: not granted');
        await client.zrem('layers:rc', id);
      },
    ],
    [
      'theirs',
      async () => {
        const sem = new Semaphore(client, 'layers:rs', 3, { lockTimeout: BENCH_TTL_MS });
        await sem.acquire();
        await sem.release();
      },
    ],
  ];
  const serverCpuUs = async () => {
    const info = await client.info('cpu');
    const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
  };
  const cycles = 1_000;
  const seen = new Map(
    layers.map(([name]) => [
      name,
      { client: [] as number[], server: [] as number[], wall: [] as number[] },
    ]),
  );
  try {
    for (let i = 0; i < 3_000; i++) for (const [, run] of layers) await run();
    for (let slice = 0; slice < slices; slice++) {
      for (const [name, run] of slice % 2 ? [...layers].reverse() : layers) {
        const s0 = await serverCpuUs();
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        for (let i = 0; i < cycles; i++) await run();
        const wall = ((performance.now() - t0) * 1_000) / cycles;
        const c = process.cpuUsage(c0);
        const s = seen.get(name)!;
        s.client.push((c.user + c.system) / cycles);
        s.server.push(((await serverCpuUs()) - s0) / cycles);
        s.wall.push(wall);
      }
    }
    console.log(`${slices} slices x ${cycles} cycles per layer; µs per cycle, median`);
    for (const [name, s] of seen)
      console.log(
        `${name.padEnd(12)} client ${median(s.client).toFixed(1).padStart(6)}  server ${median(s.server).toFixed(1).padStart(6)}  wall ${median(s.wall).toFixed(1).padStart(6)}`,
      );
  } finally {
    await engine.close();
    await backend.close();
    client.disconnect();
    await server.destroy();
  }
}

main(Number(process.argv[2] ?? 40)).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
