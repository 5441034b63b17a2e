import { runScript } from '../../lib/backends/redis-client';
import { newOwnerToken } from '../../lib/core/acquire/owner-token';
import { RedisServer } from '../support/redis-server';
import { redisClient } from './bench.contenders';
import { median } from './bench.stats';

/**
 * Diagnosis (not a test; nothing asserts a time): the server time of the Redis semaphore's two
 * uncontended scripts, acquire (a new seat) and release, on a private redis-server: the evalsha
 * usec of INFO commandstats around each call (nested calls included; the INFO calls between them
 * cool the caches, so compare trees, not these numbers with a cycle's). This tree against another
 * tree's `lib` (LIB_BASE, e.g. `git archive <commit> lib | tar -x -C /tmp/base`,
 * LIB_BASE=/tmp/base/lib), rounds interleaved, median per script.
 *
 *   LIB_BASE=/tmp/base/lib npx ts-node --transpile-only test/bench/redis-semaphore.server.ts [rounds=6]
 */
async function main(rounds: number): Promise<void> {
  const server = await RedisServer.start();
  const client = redisClient(server.port);
  const usec = async () =>
    Number(
      /cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0,
    );
  const trees: [string, string][] = [['this', '../../lib']];
  if (process.env.LIB_BASE) trees.unshift(['base', process.env.LIB_BASE]);
  const times = new Map<string, number[]>();
  const cycles = 10_000;
  try {
    for (let r = 0; r < rounds; r++) {
      for (const [name, lib] of trees) {
        const m = require(`${lib}/backends/redis/redis.semaphore-scripts`);
        let acquire = 0;
        let release = 0;
        for (let i = 0; i < cycles; i++) {
          const k = m.semaphoreKeys(`${name}:${r}:${i % 500}`);
          const keys = [k.seats, k.fence, k.queue, k.details];
          const owner = newOwnerToken();
          const t0 = await usec();
          await runScript(client, m.SEM_ACQUIRE, 4, [
            ...keys,
            owner,
            10_000,
            3,
            600_000,
            'wait',
            10_000,
            '',
            '1',
          ]);
          const t1 = await usec();
          await runScript(client, m.SEM_RELEASE, 4, [...keys, owner, 600_000, '1', '0']);
          const t2 = await usec();
          acquire += t1 - t0;
          release += t2 - t1;
        }
        for (const [what, total] of [
          ['acquire', acquire],
          ['release', release],
        ] as const) {
          const key = `${name} ${what}`;
          times.set(key, [...(times.get(key) ?? []), total / cycles]);
        }
      }
    }
    for (const [key, xs] of times)
      console.log(
        `${key.padEnd(14)} ${median(xs).toFixed(2).padStart(6)} µs server per call (median of ${rounds})`,
      );
  } finally {
    client.disconnect();
    await server.destroy();
  }
}

main(Number(process.argv[2] ?? 6)).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
