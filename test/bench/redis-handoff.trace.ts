import { fork } from 'node:child_process';
import Redis from 'ioredis';
import { LockEngine, RedisLockBackend } from '../../lib';
import { RELEASE } from '../../lib/backends/redis/redis.scripts';
import { RedisServer } from '../support/redis-server';

/**
 * Traces contended Redis handoffs end to end (not a benchmark, not a test): N worker processes run
 * the contended loop of scenario 2 (hold 1 ms, pause 2 ms) on one key through the LockEngine, and
 * record on the system-wide monotonic clock (hrtime) when a holder starts its release, when its
 * RELEASE script is written, when its reply arrives, when a waiter's subscriber receives the
 * handoff message, and when the waiter's granting backend attempt and then its engine.acquire
 * resolve. The
 * parent pairs each grant with the release before it and prints the median of every hop, plus
 * scripts per grant.
 *
 *   npx ts-node --transpile-only test/bench/redis-handoff.trace.ts [workers=8] [seconds=3]
 */
type Ev = [kind: string, ns: string, worker: number];

const ONE_MS = 1_000_000n;

async function child(port: number, worker: number, durationMs: number, key: string) {
  const events: Ev[] = [];
  const mark = (kind: string) => events.push([kind, String(process.hrtime.bigint()), worker]);
  const client = new Redis({ port, host: '127.0.0.1' });
  const evalsha = client.evalsha.bind(client) as (...a: unknown[]) => Promise<unknown>;
  let scripts = 0;
  const replies: Record<string, number> = {};
  (client as unknown as { evalsha: unknown }).evalsha = (...a: unknown[]) => {
    scripts++;
    const rel = a[0] === RELEASE.sha;
    if (rel) mark('releaseSent');
    const phase = rel ? 'release' : String(a[11]);
    return evalsha(...a).then((r) => {
      if (rel) mark('releaseReply');
      else {
        // The acquire script answers a token (string: granted) or the holder's ms left (integer).
        const k = `${phase}:${typeof r === 'string' ? 'granted' : 'busy'}`;
        replies[k] = (replies[k] ?? 0) + 1;
      }
      return r;
    });
  };
  const duplicate = client.duplicate.bind(client);
  (client as unknown as { duplicate: unknown }).duplicate = (...a: unknown[]) => {
    const sub = (duplicate as (...x: unknown[]) => Redis)(...a);
    sub.prependListener('message', () => mark('message'));
    return sub;
  };
  const backend = new RedisLockBackend({ client });
  const bTry = backend.tryAcquire.bind(backend);
  // When the backend's granting attempt resolves: splits the waiter's share into backend and
  // engine.
  backend.tryAcquire = (r) =>
    bTry(r).then((x) => {
      if (x.acquired) mark('backendDone');
      return x;
    });
  const engine = new LockEngine({
    backend,
    keyPrefix: 'trace:',
    defaults: { ttl: 10_000, wait: 10_000 },
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // Warm-up: connection, subscription, JIT.
  const warm = Date.now() + 300;
  while (Date.now() < warm) {
    const h = await engine.acquire(`${key}:warm`);
    await sleep(1);
    await h.release();
    await sleep(2);
  }
  scripts = 0;
  for (const k of Object.keys(replies)) delete replies[k];
  // Every worker starts on the parent's instant (fork and ts-node take seconds on a loaded box).
  const start = await new Promise<bigint>((resolve) => {
    process.once('message', (m) => resolve(BigInt(m as string)));
    process.send?.('ready');
  });
  while (process.hrtime.bigint() < start) await sleep(1);
  const end = start + BigInt(durationMs) * ONE_MS;
  let grants = 0;
  while (process.hrtime.bigint() < end) {
    mark('ask');
    const h = await engine.acquire(key);
    mark('granted');
    grants++;
    await sleep(1);
    mark('release');
    await h.release();
    await sleep(2);
  }
  console.log(`worker ${worker}: ${grants} grants, replies ${JSON.stringify(replies)}`);
  process.send?.({ events, scripts, grants });
  await engine.close();
  client.disconnect();
  process.exit(0);
}

/** PING round trips on a separate connection every 5 ms for `ms`: what one hop costs right now. */
async function pings(port: number, ms: number): Promise<number[]> {
  const c = new Redis({ port, host: '127.0.0.1' });
  const out: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t = performance.now();
    await c.ping();
    out.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 5));
  }
  c.disconnect();
  return out;
}

async function parent(workers: number, seconds: number) {
  const server = await RedisServer.start();
  const key = `k${Date.now()}`;
  try {
    const children: ReturnType<typeof fork>[] = [];
    const ready = (c: ReturnType<typeof fork>) => {
      children.push(c);
      if (children.length < workers) return;
      const start = String(process.hrtime.bigint() + 50n * ONE_MS);
      for (const x of children) x.send(start);
      void pings(server.port, seconds * 1000 + 50).then((p) => (rtts = p));
    };
    let rtts: number[] = [];
    const results = await Promise.all(
      Array.from(
        { length: workers },
        (_, w) =>
          new Promise<{ events: Ev[]; scripts: number; grants: number }>((resolve, reject) => {
            const c = fork(
              __filename,
              ['child', String(server.port), String(w), String(seconds * 1000), key],
              {
                execArgv: ['-r', 'ts-node/register/transpile-only'],
              },
            );
            c.on('message', (m) => (m === 'ready' ? ready(c) : resolve(m as never)));
            c.once('exit', (code) => (code ? reject(new Error(`worker exit ${code}`)) : undefined));
          }),
      ),
    );
    const events = results
      .flatMap((r) => r.events)
      .map(([k, ns, w]) => ({ k, t: BigInt(ns), w }))
      .sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : 0));
    const hops: Record<string, number[]> = {
      'release() -> RELEASE written': [],
      'RELEASE written -> waiter message': [],
      'waiter message -> acquire resolved': [],
      'message -> backend resolved': [],
      'backend resolved -> engine resolved': [],
      'release() -> next grant (handoff)': [],
      'RELEASE written -> holder reply': [],
      'grant -> release() (hold)': [],
    };
    const last: Record<string, { t: bigint; w: number } | undefined> = {};
    const byWorker = new Map<number, Record<string, bigint>>();
    for (const e of events) {
      const mine = byWorker.get(e.w) ?? {};
      byWorker.set(e.w, mine);
      const ms = (a: bigint) => Number(e.t - a) / 1e6;
      if (e.k === 'release') last.release = e;
      if (e.k === 'releaseSent') {
        if (mine.release !== undefined) hops['release() -> RELEASE written'].push(ms(mine.release));
        last.releaseSent = e;
      }
      if (e.k === 'releaseReply' && mine.releaseSent !== undefined)
        hops['RELEASE written -> holder reply'].push(ms(mine.releaseSent));
      if (e.k === 'message' && last.releaseSent && last.releaseSent.w !== e.w)
        hops['RELEASE written -> waiter message'].push(ms(last.releaseSent.t));
      if (
        e.k === 'backendDone' &&
        mine.message !== undefined &&
        mine.ask !== undefined &&
        mine.message > mine.ask
      )
        hops['message -> backend resolved'].push(ms(mine.message));
      if (
        e.k === 'granted' &&
        mine.backendDone !== undefined &&
        mine.message !== undefined &&
        mine.message > (mine.ask ?? 0n)
      )
        hops['backend resolved -> engine resolved'].push(ms(mine.backendDone));
      if (e.k === 'granted') {
        if (mine.message !== undefined && mine.ask !== undefined && mine.message > mine.ask)
          hops['waiter message -> acquire resolved'].push(ms(mine.message));
        if (last.release && last.release.w !== e.w)
          hops['release() -> next grant (handoff)'].push(ms(last.release.t));
      }
      if (e.k === 'release' && mine.granted !== undefined)
        hops['grant -> release() (hold)'].push(ms(mine.granted));
      mine[e.k] = e.t;
    }
    const grants = results.reduce((s, r) => s + r.grants, 0);
    const scripts = results.reduce((s, r) => s + r.scripts, 0);
    console.log(
      `${workers} workers, ${seconds} s: ${(grants / seconds).toFixed(0)} grants/s, ` +
        `${(scripts / grants).toFixed(2)} scripts per grant, shares ${results.map((r) => r.grants).join(' ')}`,
    );
    hops['PING round trip (parent, same time)'] = rtts;
    for (const [name, xs] of Object.entries(hops)) {
      xs.sort((a, b) => a - b);
      const q = (p: number) =>
        xs.length ? xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] : NaN;
      console.log(
        `${name.padEnd(40)} n=${String(xs.length).padStart(5)} p50 ${q(0.5).toFixed(3)} ms  p90 ${q(0.9).toFixed(3)} ms`,
      );
    }
  } finally {
    await server.destroy();
  }
}

if (process.argv[2] === 'child') {
  void child(
    Number(process.argv[3]),
    Number(process.argv[4]),
    Number(process.argv[5]),
    process.argv[6],
  );
} else {
  void parent(Number(process.argv[2] ?? 8), Number(process.argv[3] ?? 3)).then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
