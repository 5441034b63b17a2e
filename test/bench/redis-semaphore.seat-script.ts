import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { redisScript, type RedisScript } from '../../lib/backends/redis-client';
import { newOwnerToken } from '../../lib/core/acquire/owner-token';
import { RedisServer } from '../support/redis-server';
import { redisClient } from './bench.contenders';

/**
 * Diagnosis (not a test; nothing asserts a time): the uncontended semaphore acquire script of
 * this tree against others, each followed by the release's plain `ZREM`, on one private
 * redis-server, the rows taking turns every 100 cycles (the order reversed every other turn) for
 * SECS seconds. Per row: the cycle's wall time, and the server's `usec` for EVALSHA from INFO
 * commandstats (read around each block, outside its timing), per call. Rows:
 * - `ours`: this tree's SEM_SEAT_FREE (LIB_BASE=<another lib/> adds that tree's as `base`);
 * - `theirs`: redis-semaphore's acquire script (its own text, from its package), with its
 *   arguments (limit 3, a client timestamp);
 * - `empty`: a script that only returns 1, with our keys and arguments (EVALSHA's own cost).
 *
 *   [LIB_BASE=.tmp/base/lib] SECS=60 npx ts-node --transpile-only test/bench/redis-semaphore.seat-script.ts
 */
interface Row {
  name: string;
  script: RedisScript;
  keys: (key: string) => string[];
  args: (owner: string) => (string | number)[];
  cycleMs: number;
  usec: number;
  n: number;
}

const TTL = 10_000;
const RETENTION = 86_400_000;

function ourRow(name: string, lib: string): Row {
  const m = require(`${lib}/backends/redis/redis.semaphore-scripts`);
  return {
    name,
    script: m.SEM_SEAT_FREE,
    keys: (key) => {
      const k = m.semaphoreKeys(key);
      return [k.seats, k.fence, k.queue];
    },
    args: (owner) => [owner, TTL, RETENTION],
    cycleMs: 0,
    usec: 0,
    n: 0,
  };
}

function theirScript(): RedisScript {
  const file = require.resolve('redis-semaphore/lib/semaphore/acquire/lua');
  const source = /createEval\)\(`([\s\S]*?)`/.exec(readFileSync(file, 'utf8'))?.[1];
  if (!source) throw new Error(`no script text found in ${file}`);
  return redisScript(source);
}

async function main(): Promise<void> {
  const secs = Number(process.env.SECS ?? 40);
  const rows: Row[] = [ourRow('ours', resolve(__dirname, '../../lib'))];
  if (process.env.LIB_BASE) rows.unshift(ourRow('base', resolve(process.env.LIB_BASE)));
  const zero = { cycleMs: 0, usec: 0, n: 0 };
  rows.push({
    name: 'theirs',
    script: theirScript(),
    keys: (key) => [`rs:${key}`],
    args: (owner) => [3, owner, TTL, Date.now()],
    ...zero,
  });
  rows.push({ ...rows[rows.length - 2], name: 'empty', script: redisScript('return 1'), ...zero });
  const server = await RedisServer.start();
  const client = redisClient(server.port);
  const usec = async () =>
    Number(
      /cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0,
    );
  try {
    for (const row of rows) await client.script('LOAD', row.script.source);
    const end = performance.now() + secs * 1000;
    for (let turn = 0; performance.now() < end; turn++) {
      for (const row of turn % 2 ? [...rows].reverse() : rows) {
        const keys = row.keys('seat-script');
        const u0 = await usec();
        const t0 = performance.now();
        for (let i = 0; i < 100; i++) {
          const owner = newOwnerToken();
          const reply = await client.evalsha(
            row.script.sha,
            keys.length,
            ...keys,
            ...row.args(owner),
          );
          if (!(Number(reply) > 0)) throw new Error(`${row.name}: not granted (${String(reply)})`);
          await client.zrem(keys[0], owner);
        }
        row.cycleMs += performance.now() - t0;
        row.usec += (await usec()) - u0;
        row.n += 100;
      }
    }
    for (const row of rows)
      console.log(
        `${row.name.padEnd(8)} ${((1000 * row.cycleMs) / row.n).toFixed(2).padStart(7)} µs/cycle, ` +
          `EVALSHA ${(row.usec / row.n).toFixed(2)} µs on the server (${row.n} cycles)`,
      );
  } finally {
    client.disconnect();
    await server.destroy();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
