import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TcpProxy } from '../support/tcp-proxy';
import {
  TORTURE_BACKENDS,
  type BackendName,
  type RunningServers,
} from '../torture/torture.backends';
import { transpiledEnv, transpiledScript } from '../support/transpiled';

/**
 * Leader election across real processes on every networked backend (private servers from the
 * torture registry). Four campaigners, each talking to the servers through its own TCP proxies;
 * the leader is in turn SIGKILLed, SIGSTOPped past its ttl and partitioned (its proxies hold every
 * byte). Each time a new leader takes over, and the deposed one, paused or cut off, already
 * answers that it does not lead: never two that both believe it (checked at every step: at most
 * one believer; "exactly one" is liveness, which a loaded machine may delay, so it is not
 * asserted between steps). Failover times are printed (the lead's note collects them), never
 * asserted.
 */
const CASES: { name: BackendName; ttl: number }[] = [
  { name: 'redis', ttl: 2_000 },
  { name: 'redlock', ttl: 2_000 },
  { name: 'etcd', ttl: 2_000 },
  { name: 'zookeeper', ttl: 2_000 },
  { name: 'mysql', ttl: 2_000 },
  { name: 'postgres', ttl: 2_000 },
];

interface Campaigner {
  child: ChildProcess;
  proxies: TcpProxy[];
  messages: { type: string; leader?: boolean; token?: string; at: number }[];
}

async function start(name: BackendName, servers: RunningServers, ttl: number): Promise<Campaigner> {
  const proxies = await Promise.all(servers.ports.map((port) => TcpProxy.start({ port })));
  const config = JSON.stringify(servers.clientConfig(proxies.map((p) => p.port)));
  const child = fork(
    transpiledScript(join(__dirname, 'leader.process.ts')),
    [name, config, String(ttl)],
    {
      execArgv: [],
      env: transpiledEnv(),
      cwd: join(__dirname, '..', '..'),
    },
  );
  const c: Campaigner = { child, proxies, messages: [] };
  child.on('message', (m: { type: string }) => c.messages.push({ ...m, at: performance.now() }));
  return new Promise((resolve, reject) => {
    child.on('message', (m: { type: string }) => m.type === 'ready' && resolve(c));
    child.once('exit', (code) => reject(new Error(`campaigner exited with ${code}`)));
  });
}

/** Resolves with the first campaigner (of `among`) that reports a win after `since`, and when. */
function nextLeader(
  among: Campaigner[],
  since: number,
  timeoutMs = 30_000,
): Promise<{ c: Campaigner; at: number; token: bigint }> {
  return new Promise((resolve, reject) => {
    const check = () => {
      for (const c of among) {
        const win = c.messages.find((m) => m.type === 'leader' && m.at >= since);
        if (win) {
          clearInterval(timer);
          clearTimeout(limit);
          return resolve({ c, at: win.at, token: BigInt(win.token ?? 0) });
        }
      }
    };
    const timer = setInterval(check, 5);
    const limit = setTimeout(
      () => (clearInterval(timer), reject(new Error('no new leader'))),
      timeoutMs,
    );
    check();
  });
}

function status(c: Campaigner): Promise<boolean> {
  return new Promise((resolve) => {
    const on = (m: { type: string; leader?: boolean }) => {
      if (m.type !== 'status') return;
      c.child.off('message', on);
      resolve(!!m.leader);
    };
    c.child.on('message', on);
    c.child.send({ type: 'status' });
  });
}

async function kill(c: Campaigner): Promise<void> {
  if (c.child.exitCode === null && c.child.signalCode === null) {
    const gone = new Promise((r) => c.child.once('exit', r));
    c.child.kill('SIGCONT');
    c.child.kill('SIGKILL');
    await gone;
  }
  await Promise.all(c.proxies.map((p) => p.close()));
}

const believers = async (among: Campaigner[]) =>
  (await Promise.all(among.map(status))).filter(Boolean).length;

for (const { name, ttl } of CASES) {
  describe(`leader election across processes (${name})`, () => {
    const entry = TORTURE_BACKENDS[name]!;
    let dir: string;
    let servers: RunningServers;
    let fleet: Campaigner[] = [];
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `election-${name}-`));
      servers = await entry.start(dir, '');
      fleet = await Promise.all([0, 1, 2, 3].map(() => start(name, servers, ttl)));
    }, 240_000);
    afterAll(async () => {
      await Promise.all(fleet.map(kill));
      await servers?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('one leader; killed, paused past its ttl or partitioned, it is replaced, and never two believe they lead', async () => {
      const strict = entry.fencing !== 'best-effort';
      const report = (what: string, ms: number) =>
        process.stdout.write(
          `${name}: failover after ${what}: ${Math.round(ms)} ms (ttl ${ttl})\n`,
        );
      const first = await nextLeader(fleet, 0);
      expect(await believers(fleet)).toBeLessThanOrEqual(1);

      // SIGKILL: a crashed leader.
      const killedAt = performance.now();
      await kill(first.c);
      const alive = fleet.filter((c) => c !== first.c);
      const second = await nextLeader(alive, killedAt);
      report('SIGKILL', second.at - killedAt);
      expect(await believers(alive)).toBeLessThanOrEqual(1);
      if (strict) expect(second.token).toBeGreaterThan(first.token);

      // SIGSTOP past its ttl: a paused leader, which learns on resuming that it was deposed.
      const pausedAt = performance.now();
      second.c.child.kill('SIGSTOP');
      const third = await nextLeader(
        alive.filter((c) => c !== second.c),
        pausedAt,
      );
      report('SIGSTOP', third.at - pausedAt);
      second.c.child.kill('SIGCONT');
      expect(await status(second.c)).toBe(false);
      expect(await believers(alive)).toBeLessThanOrEqual(1);
      if (strict) expect(third.token).toBeGreaterThan(second.token);

      // Partition: the leader's bytes stop flowing both ways; it keeps running and must stop
      // believing it leads by the time another (the resumed one included) takes over.
      const cutAt = performance.now();
      third.c.proxies.forEach((p) => p.blackhole());
      const fourth = await nextLeader(
        alive.filter((c) => c !== third.c),
        cutAt,
      );
      report('partition', fourth.at - cutAt);
      expect(await status(third.c)).toBe(false);
      expect(await believers(alive)).toBeLessThanOrEqual(1);
      if (strict) expect(fourth.token).toBeGreaterThan(third.token);
      third.c.proxies.forEach((p) => p.heal());
    }, 180_000);
  });
}
