import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { Agent, get } from 'node:http';
import { join } from 'node:path';
import { redisClient } from './bench.contenders';
import { reason, type BenchContext, type Skipped } from './bench.context';
import { procCpuMs, rotation, summarize, type Summary } from './bench.stats';

/**
 * Scenario 3, decorator overhead: the same Express route with and without @Locked (a new key per
 * request), served by a separate Nest process. Latency: one keep-alive connection, requests one
 * after another, timed with performance.now (autocannon's histogram has 1 ms resolution, too coarse
 * for a 0.2 ms question); rounds alternate plain/locked. Throughput: autocannon, 16 connections.
 * On Redis we also count the commands the server executed per locked request and time a PING.
 */
export interface DecoratorRow {
  backend: 'memory' | 'redis';
  plain: Summary;
  locked: Summary;
  addedMedianMs: number;
  addedP99Ms: number;
  /** CPU µs the app process spent per request (sequential rounds), from /proc. */
  plainCpuUs: number;
  lockedCpuUs: number;
  plainReqPerSec: number;
  lockedReqPerSec: number;
  /** Redis only: median PING round trip from the benchmark process (ms) and script calls (round trips) per locked request. */
  redisRttMs?: number;
  /** Redis only: median latency added by a route that makes one PING round trip and takes no lock (ms). */
  addedByOneRoundTripMs?: number;
  /** Redis only: app CPU µs per request of the one-PING route. */
  pingCpuUs?: number;
  redisRoundTripsPerRequest?: number;
}

export interface DecoratorResult {
  rounds: number;
  roundMs: number;
  autocannonSeconds: number;
  connections: number;
  rows: DecoratorRow[];
  skipped: Skipped[];
}

const CONNECTIONS = 16;

export async function runDecorator(ctx: BenchContext): Promise<DecoratorResult> {
  const rounds = ctx.quick ? 2 : 5;
  const roundMs = ctx.quick ? 250 : 1_500;
  const autocannonSeconds = ctx.quick ? 1 : 6;
  const rows: DecoratorRow[] = [];
  const skipped: Skipped[] = [];
  for (const backend of ['memory', 'redis'] as const) {
    if (!ctx.systems.includes(backend)) continue;
    let app: { child: ChildProcess; port: number } | undefined;
    try {
      if (backend === 'redis') await ctx.servers.need('redis');
      app = await startApp(
        backend === 'redis' ? ['redis', String(ctx.servers.redis!.port)] : ['memory'],
      );
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const samples = { plain: [] as number[], locked: [] as number[], ping: [] as number[] };
      const cpu = { plain: 0, locked: 0, ping: 0 };
      const routes =
        backend === 'redis'
          ? (['plain', 'locked', 'ping'] as const)
          : (['plain', 'locked'] as const);
      let id = 0;
      for (const route of routes)
        await sequential(app.port, agent, route, roundMs / 2, () => `w${id++}`, []);
      for (let round = 0; round < rounds; round++) {
        for (const route of rotation(routes, round)) {
          const cpu0 = procCpuMs(app.child.pid);
          await sequential(
            app.port,
            agent,
            route,
            roundMs,
            () => `r${round}-${id++}`,
            samples[route],
          );
          cpu[route] += procCpuMs(app.child.pid) - cpu0;
        }
      }
      const plain = summarize(samples.plain);
      const locked = summarize(samples.locked);
      // Two alternating autocannon runs per route (half the time each), averaged.
      const rps = { plain: 0, locked: 0 };
      for (const route of ['plain', 'locked', 'locked', 'plain'] as const)
        rps[route] += (await cannon(app.port, route, autocannonSeconds / 2)) / 2;
      const plainReqPerSec = rps.plain;
      const lockedReqPerSec = rps.locked;
      const row: DecoratorRow = {
        backend,
        plain,
        locked,
        addedMedianMs: locked.median - plain.median,
        addedP99Ms: locked.p99 - plain.p99,
        plainCpuUs: (cpu.plain * 1000) / plain.n,
        lockedCpuUs: (cpu.locked * 1000) / locked.n,
        plainReqPerSec,
        lockedReqPerSec,
      };
      if (backend === 'redis') {
        row.addedByOneRoundTripMs = summarize(samples.ping).median - plain.median;
        row.pingCpuUs = (cpu.ping * 1000) / samples.ping.length;
        row.redisRttMs = await pingRtt(ctx.servers.redis!.port);
        const before = scriptCalls(ctx.servers.redis!.cli('info', 'commandstats'));
        const n = 500;
        for (let i = 0; i < n; i++) await request(app.port, agent, `/locked/count-${i}`);
        row.redisRoundTripsPerRequest =
          (scriptCalls(ctx.servers.redis!.cli('info', 'commandstats')) - before) / n;
      }
      agent.destroy();
      rows.push(row);
      ctx.log(
        `decorator ${backend}: +${row.addedMedianMs.toFixed(3)} ms median; ${plainReqPerSec.toFixed(0)} vs ${lockedReqPerSec.toFixed(0)} req/s`,
      );
    } catch (error) {
      skipped.push({ system: backend, reason: reason(error) });
    } finally {
      app?.child.kill('SIGKILL');
    }
  }
  return { rounds, roundMs, autocannonSeconds, connections: CONNECTIONS, rows, skipped };
}

let built: string | undefined;
/**
 * The app compiled by tsc (test/bench/tsconfig.app.json: the app and lib/), once per bench run. An
 * app run under ts-node would measure ts-node: it loads `repl`, which loads `domain`, and from then
 * on every EventEmitter of the process is created and emits through domain's wrappers.
 */
export function benchApp(): string {
  if (!built) {
    execFileSync(process.execPath, [
      require.resolve('typescript/bin/tsc'),
      '-p',
      join(__dirname, 'tsconfig.app.json'),
    ]);
    built = join(__dirname, '../../.tmp/bench-app/test/bench/decorator.app.js');
  }
  return built;
}

export function startApp(
  args: string[],
  node = process.execPath,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(node, [benchApp(), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/PORT (\d+)/);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) =>
      reject(new Error(`decorator app exited (${code}) before listening`)),
    );
  });
}

function request(port: number, agent: Agent, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve() : reject(new Error(`${path}: HTTP ${res.statusCode}`)),
      );
    }).on('error', reject);
  });
}

async function sequential(
  port: number,
  agent: Agent,
  route: string,
  ms: number,
  nextId: () => string,
  samples: number[],
): Promise<void> {
  const until = performance.now() + ms;
  for (let now = performance.now(); now < until;) {
    await request(port, agent, `/${route}/${nextId()}`);
    const after = performance.now();
    samples.push(after - now);
    now = after;
  }
}

export async function cannon(
  port: number,
  route: string,
  seconds: number,
  connections = CONNECTIONS,
): Promise<number> {
  const autocannon = require('autocannon') as (
    opts: object,
  ) => Promise<{ requests: { average: number }; non2xx: number; errors: number }>;
  let n = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    requests: [
      { method: 'GET', setupRequest: (req: object) => ({ ...req, path: `/${route}/ac-${n++}` }) },
    ],
  });
  if (result.non2xx || result.errors)
    throw new Error(`autocannon /${route}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result.requests.average;
}

async function pingRtt(port: number): Promise<number> {
  const client = redisClient(port);
  try {
    const samples: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      const t0 = performance.now();
      await client.ping();
      samples.push(performance.now() - t0);
    }
    return summarize(samples.slice(200)).median;
  } finally {
    client.disconnect();
  }
}

/**
 * Script calls executed (EVALSHA + EVAL), from INFO commandstats. The backend talks to Redis only
 * through scripts, so this is its round trips; commandstats also counts the commands a script runs
 * inside the server, which are not round trips, so a plain total would overstate them.
 */
function scriptCalls(info: string): number {
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval|evalsha_ro|eval_ro):calls=(\d+)/gm))
    total += Number(m[2]);
  return total;
}
