import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { ACQUIRE, lockKeys, RELEASE } from '../../lib/backends/redis/redis.scripts';
import { runScript } from '../../lib/backends/redis-client';
import { RedisServer } from '../support/redis-server';
import { ownCpuMs, summarize } from './bench.stats';

/**
 * Where an uncontended Redis cycle's time goes (not a test; nothing asserts a time). Interleaved
 * rounds of single steps over one connection each: a native SET NX PX, the floor's release script,
 * our acquire and release scripts sent straight from ioredis (no backend), an empty script with our
 * argument count, and the backend's tryAcquire + release. Per step: median latency, client CPU µs,
 * server µs per call (INFO commandstats, one step per server so the numbers do not mix) and the
 * request's bytes on the wire.
 *
 *   npx ts-node --transpile-only test/bench/redis-lean.probe.ts [rounds=20] [roundMs=200]
 */
const RELEASE_LUA =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
type Step = { name: string; run: (i: number) => Promise<unknown>; bytes: () => number };

function resp(args: (string | number)[]): number {
  let n = `*${args.length}\r\n`.length;
  for (const a of args) {
    const s = Buffer.byteLength(String(a));
    n += `$${s}\r\n`.length + s + 2;
  }
  return n;
}

async function main(rounds: number, roundMs: number) {
  const servers: RedisServer[] = [];
  const clients: Redis[] = [];
  const client = async () => {
    const s = await RedisServer.start();
    servers.push(s);
    const c = new Redis({ port: s.port, host: '127.0.0.1' });
    clients.push(c);
    return c;
  };
  const owner = randomBytes(16).toString('hex');
  const steps: Step[] = [];
  {
    const c = await client();
    steps.push({
      name: 'native SET NX PX (new key)',
      run: (i) => c.set(`raw:${i}`, owner, 'PX', 10000, 'NX'),
      bytes: () => resp(['SET', 'raw:bench:r1:123', owner, 'PX', 10000, 'NX']),
    });
  }
  {
    const c = await client();
    const sha = (await c.script('LOAD', RELEASE_LUA)) as string;
    steps.push({
      name: 'floor release script',
      run: async (i) => {
        await c.set(`f:${i}`, owner);
        return c.evalsha(sha, 1, `f:${i}`, owner);
      },
      bytes: () => resp(['EVALSHA', sha, 1, 'raw:bench:r1:123', owner]),
    });
  }
  const acqArgs = (key: string) => {
    const k = lockKeys(key);
    return [
      k.writer,
      k.readers,
      k.fence,
      k.queue,
      k.waiters,
      owner,
      10000,
      'exclusive',
      3600000,
      'try',
      0,
      '',
      '1',
    ];
  };
  {
    const c = await client();
    await c.script('LOAD', ACQUIRE.source);
    steps.push({
      name: 'our ACQUIRE script (new key)',
      run: (i) => runScript(c, ACQUIRE, 5, acqArgs(`bench:a${i}`)),
      bytes: () => resp(['EVALSHA', ACQUIRE.sha, 5, ...acqArgs('bench:r1:123')]),
    });
  }
  {
    const c = await client();
    await c.script('LOAD', ACQUIRE.source);
    await c.script('LOAD', RELEASE.source);
    steps.push({
      name: 'our ACQUIRE script (same key, fence exists)',
      run: async () => {
        await runScript(c, ACQUIRE, 5, acqArgs('bench:same'));
        const k = lockKeys('bench:same');
        return c.del(k.writer);
      },
      bytes: () => resp(['EVALSHA', ACQUIRE.sha, 5, ...acqArgs('bench:r1:123')]),
    });
  }
  const relArgs = (key: string) => {
    const k = lockKeys(key);
    return [
      k.writer,
      k.readers,
      k.fence,
      k.queue,
      k.waiters,
      owner,
      'exclusive',
      3600000,
      '1',
      '0',
    ];
  };
  {
    const c = await client();
    await c.script('LOAD', RELEASE.source);
    steps.push({
      name: 'our RELEASE script',
      run: async (i) => {
        const key = `bench:z${i}`;
        await c.set(lockKeys(key).writer, owner);
        return runScript(c, RELEASE, 5, relArgs(key));
      },
      bytes: () => resp(['EVALSHA', RELEASE.sha, 5, ...relArgs('bench:r1:123')]),
    });
  }
  {
    const c = await client();
    const sha = (await c.script('LOAD', 'return 1')) as string;
    steps.push({
      name: 'empty script, 5 keys + 8 args',
      run: (i) => c.evalsha(sha, 5, ...acqArgs(`bench:e${i}`)),
      bytes: () => resp(['EVALSHA', sha, 5, ...acqArgs('bench:r1:123')]),
    });
    steps.push({
      name: 'empty script, 1 key + 1 arg',
      run: (i) => c.evalsha(sha, 1, `bench:e${i}`, owner),
      bytes: () => resp(['EVALSHA', sha, 1, 'bench:r1:123', owner]),
    });
  }
  {
    const c = await client();
    const backend = new RedisLockBackend({ client: c });
    const signal = new AbortController().signal;
    steps.push({
      name: 'backend tryAcquire + release',
      run: async (i) => {
        const lock = { key: `bench:b${i}`, owner, mode: 'exclusive' as const, ttl: 10000 };
        await backend.tryAcquire({ ...lock, signal, onLost: () => undefined });
        return backend.release(lock);
      },
      bytes: () => 0,
    });
  }
  const stats = steps.map(() => ({ samples: [] as number[], cpu: 0 }));
  let seq = 0;
  for (const s of steps) for (let i = 0; i < 300; i++) await s.run(seq++);
  for (const c of clients) await c.config('RESETSTAT');
  const load0 = (await import('node:os')).loadavg();
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < steps.length; j++) {
      const idx = (round + j) % steps.length;
      const cpu0 = ownCpuMs();
      const end = performance.now() + roundMs;
      let now = performance.now();
      while (now < end) {
        const t0 = now;
        await steps[idx].run(seq++);
        now = performance.now();
        stats[idx].samples.push(now - t0);
      }
      stats[idx].cpu += ownCpuMs() - cpu0;
    }
  }
  const load1 = (await import('node:os')).loadavg();
  console.log(
    `load ${load0.map((l) => l.toFixed(1)).join(' ')} -> ${load1.map((l) => l.toFixed(1)).join(' ')}`,
  );
  const server = new Map<Redis, string>();
  for (const c of clients)
    server.set(
      c,
      (await c.info('commandstats'))
        .split('\n')
        .filter((l) => /evalsha|cmdstat_set|cmdstat_del/.test(l))
        .map((l) => l.replace(/cmdstat_|,rejected_calls=0|,failed_calls=0/g, '').trim())
        .join(' '),
    );
  steps.forEach((s, i) => {
    const sum = summarize(stats[i].samples);
    console.log(
      `${s.name.padEnd(44)} median ${(sum.median * 1000).toFixed(0).padStart(4)} µs  client CPU ${((stats[i].cpu * 1000) / sum.n).toFixed(1).padStart(5)} µs  req ${String(s.bytes()).padStart(4)} B  n=${sum.n}`,
    );
  });
  for (const [i, c] of clients.entries()) console.log(`server ${i}: ${server.get(c)}`);
  for (const c of clients) c.disconnect();
  for (const s of servers) await s.destroy();
}

main(Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 200)).then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
