import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { EtcdCluster } from '../support/etcd-server';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * Leader election across processes over a real etcd (issue 18 for etcd): the leader is SIGKILLed,
 * SIGSTOPped past its session TTL, and partitioned from etcd (a TcpProxy per campaigner, black-holed);
 * each time another campaigner leads, and the old leader, asked after the new one won, does not
 * believe it leads (never two that both believe it). Failover times are printed, not asserted.
 */
const SESSION_TTL = 2_000; // etcd's smallest lease TTL with its default 1 s election timeout

interface Campaigner {
  child: ChildProcess;
  proxy: TcpProxy;
  messages: { type: string; leader?: boolean; token?: string; at: number }[];
}

function start(proxy: TcpProxy): Promise<Campaigner> {
  const child = fork(
    join(__dirname, 'etcd-leader.process.ts'),
    [`http://127.0.0.1:${proxy.port}`, String(SESSION_TTL)],
    { execArgv: ['-r', 'ts-node/register/transpile-only'], cwd: join(__dirname, '..', '..') },
  );
  const c: Campaigner = { child, proxy, messages: [] };
  child.on('message', (m: { type: string }) => c.messages.push({ ...m, at: performance.now() }));
  return new Promise((resolve, reject) => {
    child.on('message', (m: { type: string }) => m.type === 'ready' && resolve(c));
    child.once('exit', (code) => reject(new Error(`campaigner exited with ${code}`)));
  });
}

/** The first campaigner (of `among`) that reports a win after `since`, and when. */
function nextLeader(among: Campaigner[], since: number): Promise<{ c: Campaigner; at: number }> {
  return new Promise((resolve, reject) => {
    const check = () => {
      for (const c of among) {
        const win = c.messages.find((m) => m.type === 'leader' && m.at >= since);
        if (win) {
          clearInterval(timer);
          clearTimeout(limit);
          return resolve({ c, at: win.at });
        }
      }
    };
    const timer = setInterval(check, 5);
    // A liveness bound far above any failover (session TTL 2 s), not a speed assertion.
    const limit = setTimeout(
      () => (clearInterval(timer), reject(new Error('no new leader'))),
      60_000,
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
  if (c.child.exitCode !== null || c.child.signalCode !== null) return;
  const gone = new Promise((r) => c.child.once('exit', r));
  c.child.kill('SIGCONT');
  c.child.kill('SIGKILL');
  await gone;
}

const tokenOf = (w: { c: Campaigner; at: number }) =>
  BigInt(w.c.messages.find((m) => m.type === 'leader' && m.at === w.at)?.token ?? 0);

describe('leader election across processes (etcd): failover', () => {
  let cluster: EtcdCluster;
  let fleet: Campaigner[] = [];
  beforeAll(async () => {
    cluster = await EtcdCluster.start(1);
    const port = Number(new URL(cluster.hosts()[0]).port);
    const proxies = await Promise.all([0, 1, 2, 3].map(() => TcpProxy.start({ port })));
    fleet = await Promise.all(proxies.map(start));
  }, 240_000);
  afterAll(async () => {
    await Promise.all(fleet.map(kill));
    await Promise.all(fleet.map((c) => c.proxy.close()));
    await cluster?.destroy();
  });

  it('killed, paused past its TTL, or partitioned, the leader is replaced; the old one knows it', async () => {
    const first = await nextLeader(fleet, 0);
    expect((await Promise.all(fleet.map(status))).filter(Boolean)).toHaveLength(1);

    const killedAt = performance.now();
    await kill(first.c);
    let alive = fleet.filter((c) => c !== first.c);
    const second = await nextLeader(alive, killedAt);
    const afterKill = Math.round(second.at - killedAt);
    expect((await Promise.all(alive.map(status))).filter(Boolean)).toHaveLength(1);
    expect(tokenOf(second)).toBeGreaterThan(tokenOf(first));

    const pausedAt = performance.now();
    second.c.child.kill('SIGSTOP');
    const third = await nextLeader(
      alive.filter((c) => c !== second.c),
      pausedAt,
    );
    const afterStop = Math.round(third.at - pausedAt);
    second.c.child.kill('SIGCONT');
    // Resumed past its validity: its first answer already says it does not lead.
    expect(await status(second.c)).toBe(false);
    expect(await status(third.c)).toBe(true);
    expect(tokenOf(third)).toBeGreaterThan(tokenOf(second));

    const cutAt = performance.now();
    third.c.proxy.blackhole();
    alive = alive.filter((c) => c !== third.c);
    const fourth = await nextLeader(alive, cutAt);
    const afterPartition = Math.round(fourth.at - cutAt);
    // Cut off from etcd but running: asked after the new leader won, it no longer leads.
    expect(await status(third.c)).toBe(false);
    expect((await Promise.all(alive.concat(third.c).map(status))).filter(Boolean)).toHaveLength(1);
    expect(tokenOf(fourth)).toBeGreaterThan(tokenOf(third));
    third.c.proxy.heal();
    process.stdout.write(
      `etcd failover (session TTL ${SESSION_TTL} ms): SIGKILL ${afterKill} ms, SIGSTOP ${afterStop} ms, partition ${afterPartition} ms\n`,
    );
    // Healed, the old leader campaigns again as a follower: still one leader.
    expect((await Promise.all(alive.concat(third.c).map(status))).filter(Boolean)).toHaveLength(1);
  }, 180_000);
});
