import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { newOwnerToken } from '../../lib/core/acquire/owner-token';
import { RedisServer } from '../support/redis-server';
import { BENCH_TTL_MS, BENCH_WAIT_MS, redisClient } from './bench.contenders';
import { median } from './bench.stats';
import { connect, PERMITS, type Client } from './semaphore.scenario';

/**
 * Diagnosis (not a test; nothing asserts a time): where an uncontended Redis semaphore cycle
 * (acquire + release, permits 3, one client, one private redis-server) spends its CPU, layer by
 * layer, against redis-semaphore's: per cycle, the client's CPU (process.cpuUsage: our code,
 * ioredis and the syscalls), the server's (INFO cpu) and the wall time, each layer's median over
 * slices taken in turn (the order reversed every other slice).
 * - engine: LockEngine.acquire + handle.release (what an application calls);
 * - backend: RedisLockBackend.acquire + release alone (no engine);
 * - calls, their-calls, theirs: the semaphore scenario's `scripts-only`, `their-calls` and
 *   `redis-semaphore` rows (semaphore.scenario.ts): our two calls alone, redis-semaphore's two
 *   calls alone, its `Semaphore`.
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
  const never = new AbortController().signal;
  const rows: [string, Client][] = [
    ['engine', connect('ours', server.port)],
    ['calls', connect('scripts-only', server.port)],
    ['their-calls', connect('their-calls', server.port)],
    ['theirs', connect('redis-semaphore', server.port)],
  ];
  const take =
    (c: Client): Cycle =>
    async () => {
      const release = await c.take('layers');
      await release();
    };
  const layers: [string, Cycle][] = rows.map(([name, c]) => [name, take(c)]);
  layers.splice(1, 0, [
    'backend',
    async () => {
      const request = {
        key: 'layers:backend',
        owner: newOwnerToken(),
        mode: 'exclusive' as const,
        ttl: BENCH_TTL_MS,
        permits: PERMITS,
        wait: BENCH_WAIT_MS,
        signal: never,
        onLost: () => undefined,
      };
      if (!(await backend.acquire(request)).acquired) throw new Error('backend: not granted');
      await backend.release(request);
    },
  ]);
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
    for (const [, c] of rows) await c.close();
    await backend.close();
    client.disconnect();
    await server.destroy();
  }
}

main(Number(process.argv[2] ?? 40)).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
