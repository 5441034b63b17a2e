import { randomBytes } from 'node:crypto';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { RedisServer } from '../support/redis-server';
import { ours, redisClient, type Contender, type LockClient } from './bench.contenders';
import { rawIoredis, redisSemaphore } from './bench.competitors';
import { BenchServers } from './bench.servers';
import { ownCpuMs, summarize } from './bench.stats';

/**
 * A dedicated, longer uncontended A/B on Redis (not a test; nothing asserts a time): acquire +
 * release of a new key, one connection per contender, in many short rounds whose order rotates, so
 * the load of other processes spreads evenly. Contenders: ours through the LockEngine (what users
 * get), ours backend only (tryAcquire + release, no engine: the backend's share), the raw floor
 * (SET NX PX + owner-checked EVALSHA DEL) and redis-semaphore's Mutex. Prints median, p90, cycles/s
 * and client CPU µs per cycle, and each contender ÷ the floor and ÷ redis-semaphore.
 *
 *   npx ts-node --transpile-only test/bench/redis-uncontended.ab.ts [rounds=40] [roundMs=250]
 */
const backendOnly: Contender = {
  name: 'ours, backend only',
  system: 'redis',
  ours: true,
  waits: '-',
  async connect(servers) {
    const client = redisClient(servers.redis!.port);
    const backend = new RedisLockBackend({ client });
    return {
      async lock(key) {
        const lock = {
          key: `bo:${key}`,
          owner: randomBytes(16).toString('hex'),
          mode: 'exclusive' as const,
          ttl: 10_000,
        };
        const r = await backend.tryAcquire({
          ...lock,
          signal: new AbortController().signal,
          onLost: () => undefined,
        });
        if (!r.acquired) throw new Error('busy');
        return () => backend.release(lock);
      },
      async close() {
        await backend.close();
        client.disconnect();
      },
    };
  },
};

async function main(rounds: number, roundMs: number) {
  const server = await RedisServer.start();
  const servers = BenchServers.attached({ redis: server.port });
  const contenders = [ours('redis'), backendOnly, rawIoredis, redisSemaphore];
  const runs: { c: Contender; client: LockClient; samples: number[]; busy: number; cpu: number }[] =
    [];
  try {
    for (const c of contenders)
      runs.push({ c, client: await c.connect(servers), samples: [], busy: 0, cpu: 0 });
    for (const r of runs) await cycles(r.client, `warm:${r.c.name}`, 300, []);
    const load0 = (await import('node:os')).loadavg();
    for (let round = 0; round < rounds; round++) {
      for (let j = 0; j < runs.length; j++) {
        const r = runs[(round + j) % runs.length];
        const cpu0 = ownCpuMs();
        r.busy += await cycles(r.client, `r${round}:${r.c.name}`, roundMs, r.samples);
        r.cpu += ownCpuMs() - cpu0;
      }
    }
    const load1 = (await import('node:os')).loadavg();
    const rate = (r: (typeof runs)[number]) => r.samples.length / (r.busy / 1000);
    const floor = rate(runs[2]);
    const sem = rate(runs[3]);
    console.log(
      `${rounds} rounds x ${roundMs} ms per contender; load ${load0.map((l) => l.toFixed(1)).join(' ')} -> ${load1.map((l) => l.toFixed(1)).join(' ')}`,
    );
    for (const r of runs) {
      const s = summarize(r.samples);
      console.log(
        `${r.c.name.padEnd(28)} ${rate(r).toFixed(0).padStart(6)} cycles/s  median ${s.median.toFixed(3)} ms  p99 ${s.p99.toFixed(3)} ms  client CPU ${((r.cpu * 1000) / r.samples.length).toFixed(0)} µs/cycle  ÷floor ${(rate(r) / floor).toFixed(2)}  ÷redis-semaphore ${(rate(r) / sem).toFixed(2)}`,
      );
    }
  } finally {
    await Promise.all(runs.map((r) => r.client.close().catch(() => undefined)));
    await server.destroy();
  }
}

async function cycles(client: LockClient, prefix: string, ms: number, samples: number[]) {
  const start = performance.now();
  let now = start;
  let i = 0;
  while (now < start + ms) {
    const t0 = now;
    const release = await client.lock(`${prefix}:${i++}`);
    await release();
    now = performance.now();
    samples.push(now - t0);
  }
  return now - start;
}

main(Number(process.argv[2] ?? 40), Number(process.argv[3] ?? 250)).then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
