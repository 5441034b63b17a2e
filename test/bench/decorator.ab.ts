/**
 * A/B of scenario 3 by CPU (run by hand; speed is never asserted): app CPU µs per request of the
 * plain, async and @Locked routes of decorator.app.ts on memory, under autocannon (16 connections),
 * for one or more builds of the library, each in its own app process. Every round runs each
 * (build, route) pair once in a shuffled order, so the machine's load hits each alike; CPU comes
 * from /proc/<pid>/stat of the app, requests from autocannon; median over rounds. CPU per request
 * survives a loaded machine far better than req/s does.
 *
 * Builds: AB_LIBS="this=/tmp/this/dist/lib,base=/tmp/base/dist/lib" (tsc builds, e.g. of main's
 * HEAD and of this branch); without it, this tree's lib through ts-node. A build named `bare`
 * (AB_LIBS="this,nomod=bare", AB_ROUTES=plain,async) is the app without DistributedLockModule. AB_ROUTES=locked picks
 * routes (default plain,async,locked). AB_CPU_PROF=<dir> runs the apps under `node --cpu-prof`
 * (profiles written to <dir> when they exit). AB_RATE=<req/s> drives every route at that same fixed
 * overall rate (autocannon overallRate) instead of as fast as it answers: at equal rates the CPU
 * per request compares code, not throughput (kernel wake-ups per request grow as req/s falls).
 *
 * Usage: npx ts-node --transpile-only test/bench/decorator.ab.ts [rounds=6] [seconds=2]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { benchApp } from './decorator.scenario';
import { procCpuMs } from './bench.stats';

const CONNECTIONS = 16;
const ROUTES = (process.env.AB_ROUTES ?? 'plain,async,locked').split(',');

interface App {
  name: string;
  child: ChildProcess;
  port: number;
}

function startApp(name: string, lib: string | undefined): Promise<App> {
  const prof = process.env.AB_CPU_PROF;
  const child = spawn(
    process.execPath,
    [
      ...(prof
        ? ['--cpu-prof', '--cpu-prof-dir', prof, '--cpu-prof-name', `${name}.cpuprofile`]
        : []),
      benchApp(),
      lib === 'bare' ? 'bare' : 'memory',
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: lib && lib !== 'bare' ? { ...process.env, DECORATOR_LIB: lib } : process.env,
    },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/PORT (\d+)/);
      if (m) resolve({ name, child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`app ${name} exited (${code})`)));
  });
}

async function cannon(
  port: number,
  route: string,
  seconds: number,
): Promise<{ total: number; rps: number }> {
  const autocannon = require('autocannon') as (opts: object) => Promise<{
    requests: { average: number; total: number };
    non2xx: number;
    errors: number;
  }>;
  let n = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: seconds,
    ...(process.env.AB_RATE ? { overallRate: Number(process.env.AB_RATE) } : {}),
    requests: [
      { method: 'GET', setupRequest: (req: object) => ({ ...req, path: `/${route}/ab-${n++}` }) },
    ],
  });
  if (result.non2xx || result.errors)
    throw new Error(`autocannon /${route}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { total: result.requests.total, rps: result.requests.average };
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 6);
  const seconds = Number(process.argv[3] ?? 2);
  const libs: [string, string | undefined][] = process.env.AB_LIBS
    ? process.env.AB_LIBS.split(',').map((s) => s.split('=') as [string, string])
    : [['this', undefined]];
  const apps: App[] = [];
  for (const [name, lib] of libs) apps.push(await startApp(name, lib));
  const cpu: Record<string, number[]> = {};
  const rps: Record<string, number[]> = {};
  const pairs = apps.flatMap((app) => ROUTES.map((route) => ({ app, route })));
  for (const { app, route } of pairs) await cannon(app.port, route, 1); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const { app, route } of [...pairs].sort(() => Math.random() - 0.5)) {
      const id = `${app.name} ${route}`;
      const cpu0 = procCpuMs(app.child.pid);
      const { total, rps: perSec } = await cannon(app.port, route, seconds);
      (cpu[id] ??= []).push(((procCpuMs(app.child.pid) - cpu0) * 1000) / total);
      (rps[id] ??= []).push(perSec);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `decorator A/B on memory: ${rounds} rounds x ${seconds} s per (build, route), ${CONNECTIONS} connections${process.env.AB_RATE ? `, fixed ${process.env.AB_RATE} req/s` : ''}`,
  );
  console.log('  build route    app CPU µs/req (median; rounds)          req/s (median)');
  for (const id of Object.keys(cpu))
    console.log(
      `  ${id.padEnd(12)} ${median(cpu[id]).toFixed(1).padStart(7)}  (${cpu[id].map((x) => x.toFixed(0)).join(' ')})  ${median(rps[id]).toFixed(0).padStart(7)}`,
    );
  for (const app of ROUTES.includes('locked') && ROUTES.includes('plain') ? apps : []) {
    const c = (route: string) => median(cpu[`${app.name} ${route}`]);
    const q = (route: string) => median(rps[`${app.name} ${route}`]);
    console.log(
      `  ${app.name}: locked - plain = ${(c('locked') - c('plain')).toFixed(1)} µs/req, locked - async = ${(c('locked') - (ROUTES.includes('async') ? c('async') : NaN)).toFixed(1)} µs/req; locked/plain req/s = ${(q('locked') / q('plain')).toFixed(2)}x`,
    );
  }
  for (const app of apps) {
    const exited = new Promise((resolve) => app.child.once('exit', resolve));
    app.child.kill('SIGTERM'); // the app closes and exits (writing its --cpu-prof profile)
    await exited;
  }
}

void main();
