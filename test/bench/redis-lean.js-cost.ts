import { randomBytes } from 'node:crypto';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { ACQUIRE } from '../../lib/backends/redis/redis.scripts';
import type { RedisClientLike } from '../../lib/backends/redis-client';
import { LockEngine } from '../../lib/core/lock-engine';
import { ownCpuMs } from './bench.stats';

/**
 * The JavaScript share of an uncontended Redis cycle, with no network and no ioredis: a stub
 * client answers every EVALSHA at once (the acquire script's token, the release's 1). CPU µs per
 * cycle of the backend alone (tryAcquire + release, and acquire + release, the engine's path) and
 * through the engine. Not a test; the numbers are for docs/benchmarks.md.
 *
 *   npx ts-node --transpile-only test/bench/redis-lean.js-cost.ts [cycles=200000]
 */
const stub = {
  evalsha: (sha: string) => Promise.resolve(sha === ACQUIRE.sha ? '1764566000000001' : 1),
  eval: () => Promise.resolve(1),
  pipeline: () => {
    throw new Error('no pipeline');
  },
  duplicate: () => ({
    subscribe: () => Promise.resolve(),
    on: () => undefined,
    disconnect: () => undefined,
  }),
} as unknown as RedisClientLike;

async function measure(name: string, n: number, cycle: (i: number) => Promise<void>) {
  for (let i = 0; i < 20_000; i++) await cycle(i);
  const cpu0 = ownCpuMs();
  for (let i = 0; i < n; i++) await cycle(i);
  console.log(`${name.padEnd(40)} ${(((ownCpuMs() - cpu0) * 1000) / n).toFixed(2)} µs CPU/cycle`);
}

async function main(n: number) {
  const backend = new RedisLockBackend({ client: stub });
  const engine = new LockEngine({
    backend,
    keyPrefix: 'b:',
    defaults: { ttl: 10_000, wait: 10_000 },
  });
  const owner = randomBytes(16).toString('hex');
  const signal = new AbortController().signal;
  const lock = (i: number) => ({ key: `b:k${i}`, owner, mode: 'exclusive' as const, ttl: 10_000 });
  for (let round = 0; round < 2; round++) {
    await measure('two resolved promises (the floor: none)', n, async () => {
      await stub.evalsha('x', 0);
      await stub.evalsha('y', 0);
    });
    await measure('backend tryAcquire + release', n, async (i) => {
      await backend.tryAcquire({ ...lock(i), signal, onLost: () => undefined });
      await backend.release(lock(i));
    });
    await measure('backend acquire (wait) + release', n, async (i) => {
      await backend.acquire({ ...lock(i), wait: 10_000, signal, onLost: () => undefined });
      await backend.release(lock(i));
    });
    await measure('engine acquire + release', n, async (i) => {
      await (await engine.acquire(`k${i}`)).release();
    });
  }
  await engine.close();
}

main(Number(process.argv[2] ?? 200_000)).then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
