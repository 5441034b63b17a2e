import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, removeDir, tempDir } from '../support/server-process';
import { TcpProxy } from '../support/tcp-proxy';
import { FencedStore } from './fenced-store.server';
import { checkHistories, type CheckResult } from './history.checker';
import { now, type HistoryEvent, type NemesisEvent, type Role, type Via } from './history.types';
import { Nemesis, type NemesisWorker } from './torture.nemesis';
import { quietMs, type Fault, type TortureOptions } from './torture.options';
import { TORTURE_BACKENDS, type RunningServers } from './torture.backends';
import type { WorkerConfig } from './torture.worker';
import { ROOT, transpiled, transpiledEnv } from '../support/transpiled';
import { startTortureFence, type TortureFence } from './torture.fences';

/**
 * One torture run: private servers, the fenced store, one proxy per worker per server, N worker
 * processes, the nemesis for the run minus a quiet tail, then a graceful stop and the checker.
 */
export interface TortureReport {
  options: TortureOptions;
  dir: string;
  startedAt: string;
  elapsedMs: number;
  /** Where the time outside the run itself went (ms). */
  timings: { buildMs: number; serversMs: number; workersMs: number; stopMs: number };
  faults: Record<Fault, number>;
  notes: string[];
  nemesis: NemesisEvent[];
  workers: { slot: number; role: Role; via: Via; incarnations: number }[];
  /** Workers that died on their own (unhandled errors...), each restarted. */
  crashes: WorkerCrash[];
  result: CheckResult;
}

const VIAS: Via[] = ['withLock', 'acquire', 'locked'];

/** A worker process that exited on its own (not killed by the nemesis or the final stop). */
export interface WorkerCrash {
  slot: number;
  inc: number;
  t: number;
  exit: string;
  log: string;
}

class Slot implements NemesisWorker {
  child: ChildProcess | undefined;
  inc = 0;
  private stopping = false;
  private readonly expected = new WeakSet<ChildProcess>();

  constructor(
    readonly slot: number,
    readonly role: Role,
    readonly via: Via,
    readonly proxies: TcpProxy[],
    private readonly spawn: (s: Slot) => Promise<ChildProcess>,
    private readonly onCrash: (crash: WorkerCrash) => void,
    private readonly logOf: (slot: number, inc: number) => string,
  ) {}

  setClockRate(rate: number): void {
    const c = this.child;
    if (c && c.exitCode === null && c.signalCode === null && c.connected)
      c.send({ type: 'clock', rate }, () => undefined);
  }

  signal(sig: NodeJS.Signals): void {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null)
      this.child.kill(sig);
  }

  async start(): Promise<void> {
    this.inc++;
    const child = await this.spawn(this);
    this.child = child;
    const inc = this.inc;
    child.once('exit', (code, sig) => {
      if (this.expected.has(child)) return;
      // A crash is a finding (reported), and the run goes on: a supervisor would restart the app.
      this.onCrash({
        slot: this.slot,
        inc,
        t: now(),
        exit: String(code ?? sig),
        log: tail(this.logOf(this.slot, inc)),
      });
      if (!this.stopping && this.child === child) this.start().catch(() => undefined);
    });
  }

  async replace(): Promise<void> {
    const old = this.child;
    if (old && old.exitCode === null && old.signalCode === null) {
      this.expected.add(old);
      const exited = new Promise((r) => old.once('exit', r));
      old.kill('SIGKILL');
      await exited;
    }
    await this.start();
  }

  /** SIGTERM: the worker finishes its operation, releases and exits; SIGKILL if it does not. */
  async stop(): Promise<void> {
    this.stopping = true;
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    this.expected.add(c);
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGCONT');
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(0, 12).join('\n');
  } catch {
    return '';
  }
}

export async function runTorture(
  options: TortureOptions,
  log: (line: string) => void = () => undefined,
): Promise<TortureReport> {
  const def = TORTURE_BACKENDS[options.backend];
  if (!def) throw new Error(`backend ${options.backend} has not landed`);
  const dir = tempDir(`torture-${options.backend}`);
  const startedAt = new Date().toISOString();
  const t0 = now();
  const notes: string[] = [];
  const timings = { buildMs: 0, serversMs: 0, workersMs: 0, stopMs: 0 };
  let servers: RunningServers | undefined;
  // The package's own fenced store decides the counter's reads and writes (torture.fences.ts).
  const fence: TortureFence = await startTortureFence(options.backend);
  const store = new FencedStore(now, fence);
  const slots: Slot[] = [];
  const crashes: WorkerCrash[] = [];
  const logOf = (slot: number, inc: number) => join(dir, `worker-${slot}-${inc}.log`);
  try {
    const build = transpiled();
    timings.buildMs = Math.round(now() - t0);
    servers = await def.start(dir, build);
    timings.serversMs = Math.round(now() - t0) - timings.buildMs;
    if (!options.signalCheck)
      notes.push(
        '--signal-check off: workers write even after their signal aborted; only the fence protects the store',
      );
    if (options.faults.includes('restart') && servers.restartable.length === 0)
      notes.push(`restart skipped: ${servers.restartNote}`);
    const storePort = await freePort();
    await store.listen(storePort);

    const spawn = (slot: Slot) =>
      spawnWorker(
        slot,
        {
          slot: slot.slot,
          inc: slot.inc,
          backend: options.backend,
          client: (servers as RunningServers).clientConfig(slot.proxies.map((p) => p.port)),
          storePort,
          historyFile: join(dir, `history-${slot.slot}-${slot.inc}.jsonl`),
          role: slot.role,
          via: slot.via,
          ttl: options.ttl,
          wait: options.wait,
          key: 'counter',
          seed: options.seed,
          yieldMax: 30,
          thinkMax: 20,
          signalCheck: options.signalCheck,
          workloads: options.workloads ?? ['plain'],
          clock: options.faults.includes('clock'),
        },
        dir,
        build,
      );
    for (let i = 0; i < options.workers; i++) {
      const proxies = await Promise.all(servers.ports.map((port) => TcpProxy.start({ port })));
      const role: Role = options.mode === 'shared' && i % 2 === 1 ? 'reader' : 'writer';
      slots.push(
        new Slot(i, role, VIAS[i % VIAS.length], proxies, spawn, (c) => crashes.push(c), logOf),
      );
    }
    const spawnAt = now();
    await Promise.all(slots.map((s) => s.start()));
    timings.workersMs = Math.round(now() - spawnAt);
    log(
      `torture ${options.backend}: ${options.workers} workers ready in ${Math.round(now() - t0)} ms, seed ${options.seed}, faults ${options.faults.join(',') || 'none'}`,
    );

    const runStart = now();
    const nemesisUntil = runStart + options.durationMs - quietMs(options);
    const nemesis = new Nemesis(
      options.seed,
      options.faults,
      options.ttl,
      { workers: slots, servers: servers.restartable, holder: () => store.lastEntrant },
      options.clockRates,
    );
    const timer = setTimeout(() => nemesis.stop(), Math.max(0, nemesisUntil - now()));
    await nemesis.run(nemesisUntil);
    clearTimeout(timer);
    const healAt = now();
    log(`nemesis done: ${JSON.stringify(nemesis.counts)}; quiet for liveness`);
    // The quiet tail: long enough for every worker to show progress within 2 x ttl + wait.
    await new Promise((r) =>
      setTimeout(
        r,
        Math.max(runStart + options.durationMs - now(), 2 * options.ttl + options.wait + 500),
      ),
    );
    const stopAt = now();
    await Promise.all(slots.map((s) => s.stop()));
    timings.stopMs = Math.round(now() - stopAt);

    const histories = readdirSync(dir)
      .filter((f) => f.startsWith('history-'))
      .map((f) => readHistory(join(dir, f)));
    const result = checkHistories({
      histories,
      records: store.records,
      value: store.value,
      shadow: store.shadow,
      values: store.values(),
      healAt,
      ttl: options.ttl,
      wait: options.wait,
      slots: options.workers,
      fencing: def.fencing ?? 'strict',
      signalCheck: options.signalCheck,
    });
    const decided = store.records.filter((r) => r.op === 'read' || r.op === 'write');
    const refusedByFence = decided.filter((r) => !r.accepted).length;
    notes.push(
      `fence: ${fence.name} decided ${decided.length} counter reads/writes (${refusedByFence} refused)` +
        (store.fenceMismatches > 0
          ? `; ${store.fenceMismatches} reads disagreed with the mirror`
          : ''),
    );
    if (store.fenceMismatches > 0) result.safe = false;
    writeFileSync(join(dir, 'store.jsonl'), store.records.map((r) => JSON.stringify(r)).join('\n'));
    const report: TortureReport = {
      options,
      dir,
      startedAt,
      elapsedMs: Math.round(now() - t0),
      timings,
      faults: nemesis.counts,
      notes,
      nemesis: nemesis.events,
      workers: slots.map((s) => ({ slot: s.slot, role: s.role, via: s.via, incarnations: s.inc })),
      crashes,
      result,
    };
    writeFileSync(options.report ?? join(dir, 'report.json'), JSON.stringify(report, null, 2));
    return report;
  } finally {
    await Promise.all(slots.map((s) => s.stop().catch(() => undefined)));
    await Promise.all(slots.flatMap((s) => s.proxies.map((p) => p.close())));
    await store.close();
    await servers?.stop().catch(() => undefined);
    await fence.close().catch(() => undefined);
  }
}

/** Removes a passing run's directory (histories and logs are kept when a run fails). */
export function cleanUp(report: TortureReport): void {
  if (report.result.safe && report.result.live && report.crashes.length === 0)
    removeDir(report.dir);
}

function readHistory(file: string): HistoryEvent[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const events: HistoryEvent[] = [];
  // A SIGKILL can cut the last line short; every complete line is kept.
  for (const line of lines) {
    try {
      if (line) events.push(JSON.parse(line) as HistoryEvent);
    } catch {
      // torn last line
    }
  }
  return events;
}

/**
 * How long a worker may take to start (load the driver, build the Nest app, connect). Generous: on
 * a shared 2-core machine under a load of 90, eight of them took over a minute.
 */
const READY_MS = 300_000;

function spawnWorker(
  slot: Slot,
  config: WorkerConfig,
  dir: string,
  build: string,
): Promise<ChildProcess> {
  const fd = openSync(join(dir, `worker-${slot.slot}-${slot.inc}.log`), 'a');
  const child = fork(join(build, 'test/torture/torture.worker.js'), [], {
    cwd: ROOT,
    execArgv: [],
    env: { ...transpiledEnv(), TORTURE_WORKER: JSON.stringify(config) },
    stdio: ['ignore', fd, fd, 'ipc'],
  });
  closeSync(fd);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`worker ${slot.slot} not ready after ${READY_MS / 1000} s (see ${dir})`)),
      READY_MS,
    );
    child.once('message', () => {
      clearTimeout(timer);
      resolve(child);
    });
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(
        new Error(`worker ${slot.slot} exited (${code ?? sig}) before it was ready; log in ${dir}`),
      );
    });
  });
}
