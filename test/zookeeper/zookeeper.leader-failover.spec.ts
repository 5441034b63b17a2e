import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { TcpProxy } from '../support/tcp-proxy';
import { ZooKeeperServer } from '../support/zookeeper-server';

/**
 * Leader election across processes over a real ZooKeeper (campaigns are Curator LeaderLatch
 * nodes): a leader killed (SIGKILL), paused past its session timeout (SIGSTOP) or partitioned
 * (its own TcpProxy blackholed) is replaced once the server expires its session, and never do two
 * campaigners both believe they lead: the term's ttl is below the session timeout, so a leader cut
 * off from the server stops believing before the server can expire its session and let another
 * node lead. Failover times are printed, not asserted.
 */
const SESSION_TIMEOUT = 4_000;
const TTL = 3_000;

interface Campaigner {
  child: ChildProcess;
  proxy: TcpProxy;
  messages: { type: string; leader?: boolean; token?: string; at: number }[];
}

async function start(server: ZooKeeperServer): Promise<Campaigner> {
  const proxy = await TcpProxy.start({ port: server.port });
  const child = fork(
    join(__dirname, 'leader.process.ts'),
    [proxy.connectionString, String(SESSION_TIMEOUT), String(TTL)],
    { execArgv: ['-r', 'ts-node/register/transpile-only'], cwd: join(__dirname, '..', '..') },
  );
  const c: Campaigner = { child, proxy, messages: [] };
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
  timeoutMs = 60_000,
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
  await c.proxy.close();
}

describe('leader election across processes (ZooKeeper)', () => {
  let server: ZooKeeperServer;
  let fleet: Campaigner[] = [];
  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    fleet = await Promise.all([0, 1, 2, 3].map(() => start(server)));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(fleet.map(kill));
    await server?.destroy();
  });

  it('killed, paused past its session, or partitioned, the leader is replaced, and never two believe they lead', async () => {
    const report = (what: string, ms: number) =>
      process.stdout.write(
        `ZooKeeper failover after ${what}: ${Math.round(ms)} ms (session timeout ${SESSION_TIMEOUT}, ttl ${TTL})\n`,
      );
    const first = await nextLeader(fleet, 0);
    expect((await Promise.all(fleet.map(status))).filter(Boolean)).toHaveLength(1);

    // SIGKILL: the session expires on the server, its latch node goes, the next node leads.
    const killedAt = performance.now();
    await kill(first.c);
    const alive = fleet.filter((c) => c !== first.c);
    const second = await nextLeader(alive, killedAt);
    report('SIGKILL', second.at - killedAt);
    expect((await Promise.all(alive.map(status))).filter(Boolean)).toHaveLength(1);
    expect(second.token).toBeGreaterThan(first.token);

    // SIGSTOP past the session timeout: replaced; on SIGCONT its first answer is already "not leader".
    const pausedAt = performance.now();
    second.c.child.kill('SIGSTOP');
    const others = alive.filter((c) => c !== second.c);
    const third = await nextLeader(others, pausedAt);
    report('SIGSTOP', third.at - pausedAt);
    expect((await Promise.all(others.map(status))).filter(Boolean)).toHaveLength(1);
    second.c.child.kill('SIGCONT');
    expect(await status(second.c)).toBe(false);
    expect(await status(third.c)).toBe(true);
    expect(third.token).toBeGreaterThan(second.token);

    // Partition: the leader's own proxy swallows everything both ways. It stops believing at its
    // ttl (before the server can expire its session); another leads after the session expires.
    const cutAt = performance.now();
    third.c.proxy.blackhole('both');
    // Ask the partitioned leader (its IPC is not partitioned) until it says it no longer leads.
    const steppedDown = (async () => {
      while (await status(third.c)) await new Promise((r) => setImmediate(r));
      return performance.now();
    })();
    const fourth = await nextLeader(
      alive.filter((c) => c !== third.c),
      cutAt,
    );
    report('partition', fourth.at - cutAt);
    const downAt = await steppedDown;
    process.stdout.write(
      `partitioned leader stopped believing it leads after ${Math.round(downAt - cutAt)} ms; its onChange(false) came after ${Math.round((third.c.messages.find((m) => m.type === 'follower' && m.at >= cutAt)?.at ?? NaN) - cutAt)} ms\n`,
    );
    expect(downAt).toBeLessThan(fourth.at); // it had stopped believing before the new one was told it leads
    expect((await Promise.all(alive.map(status))).filter(Boolean)).toHaveLength(1);
    expect(await status(third.c)).toBe(false);
    expect(fourth.token).toBeGreaterThan(third.token);
    third.c.proxy.heal();
    // Healed, the old leader's session is gone: it campaigns again as a follower.
    expect(await status(fourth.c)).toBe(true);
  }, 180_000);
});
