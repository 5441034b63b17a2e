import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';
import { eventually } from '../support/server-process';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * Leader election across processes over MySQL (MariaDB) and PostgreSQL: a leader SIGKILLed,
 * SIGSTOPped past its ttl, or cut off from the database (its own TcpProxy blackholed) is replaced,
 * and the deposed one never still believes it leads once its successor has won. Each campaigner
 * reaches the database through its own proxy. Failover times are printed, not asserted.
 */
const TTL = 3_000; // renewals every second: a loaded machine (load average 90 seen) must not depose a live leader

interface Campaigner {
  child: ChildProcess;
  proxy: TcpProxy;
  /** at: when the parent received it; t: when the campaigner sent it (machine clock, epoch ms). */
  messages: { type: string; leader?: boolean; token?: string; at: number; t?: number }[];
}

async function start(kind: string, server: { connection: Record<string, unknown> }) {
  const target = server.connection as { host: string; port: number };
  const proxy = await TcpProxy.start({ host: target.host, port: target.port });
  const connection = { ...server.connection, host: '127.0.0.1', port: proxy.port };
  const child = fork(
    join(__dirname, 'sql-leader.process.ts'),
    [kind, JSON.stringify(connection), String(TTL)],
    { execArgv: ['-r', 'ts-node/register/transpile-only'], cwd: join(__dirname, '..', '..') },
  );
  const c: Campaigner = { child, proxy, messages: [] };
  child.on('message', (m: { type: string }) => c.messages.push({ ...m, at: performance.now() }));
  return new Promise<Campaigner>((resolve, reject) => {
    child.on('message', (m: { type: string }) => m.type === 'ready' && resolve(c));
    child.once('exit', (code) => reject(new Error(`campaigner exited with ${code}`)));
  });
}

/** The first campaigner (of `among`) that reports a win after `since`, and when. */
function nextLeader(
  among: Campaigner[],
  since: number,
  timeoutMs = 30_000,
): Promise<{ c: Campaigner; at: number; t: number; token: bigint }> {
  return new Promise((resolve, reject) => {
    const check = () => {
      for (const c of among) {
        const win = c.messages.find((m) => m.type === 'leader' && m.at >= since);
        if (win) {
          clearInterval(timer);
          clearTimeout(limit);
          return resolve({ c, at: win.at, t: win.t!, token: BigInt(win.token!) });
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

const servers: [
  string,
  () => Promise<{ connection: Record<string, unknown>; destroy(): Promise<void> }>,
][] = [
  ['mysql', () => MariaDbServer.start()],
  ['postgres', () => PostgresServer.start()],
];

describe.each(servers)('leader election across processes (%s)', (kind, startServer) => {
  let server: { connection: Record<string, unknown>; destroy(): Promise<void> };
  let fleet: Campaigner[] = [];
  beforeAll(async () => {
    server = await startServer();
    fleet = await Promise.all([0, 1, 2].map(() => start(kind, server)));
  }, 300_000); // a loaded machine takes minutes to start a server and compile three children
  afterAll(async () => {
    await Promise.all(fleet.map(kill));
    await server?.destroy();
  });

  it('killed, paused past its ttl, or partitioned from the database: the leader is replaced, and never two believe they lead', async () => {
    const report = (what: string, ms: number) =>
      process.stdout.write(`${kind} failover after ${what}: ${Math.round(ms)} ms (ttl ${TTL})\n`);
    const first = await nextLeader(fleet, 0);
    expect((await Promise.all(fleet.map(status))).filter(Boolean)).toHaveLength(1);

    // SIGKILL: the row expires by the server's clock; a follower takes it over.
    const killedAt = performance.now();
    await kill(first.c);
    const alive = fleet.filter((c) => c !== first.c);
    const second = await nextLeader(alive, killedAt);
    report('SIGKILL', second.at - killedAt);
    expect((await Promise.all(alive.map(status))).filter(Boolean)).toHaveLength(1);
    expect(second.token).toBeGreaterThan(first.token);

    // SIGSTOP past the ttl: replaced; on resuming, its first answer already says it does not lead.
    const pausedAt = performance.now();
    second.c.child.kill('SIGSTOP');
    const third = await nextLeader(
      alive.filter((c) => c !== second.c),
      pausedAt,
    );
    report('SIGSTOP', third.at - pausedAt);
    second.c.child.kill('SIGCONT');
    expect(await status(second.c)).toBe(false);
    expect(await status(third.c)).toBe(true);
    expect(third.token).toBeGreaterThan(second.token);

    // Partition: the leader's connections hang (bytes held both ways). Its renewals cannot land, so
    // it steps down when its validity ends; the other takes over once the row expires.
    const cutAt = performance.now();
    third.c.proxy.blackhole('both');
    const fourth = await nextLeader(
      alive.filter((c) => c !== third.c),
      cutAt,
    );
    report('partition', fourth.at - cutAt);
    // Its validity (dated from before each renewal was sent) ended before the row expired on the
    // server: by the time the successor won, it no longer believes it leads.
    expect(await status(third.c)).toBe(false);
    // The loss event (the term's signal) follows from the watchdog's validity timer: print when it
    // fired relative to the successor's win, both on the machine's clock.
    await eventually(() => third.c.messages.some((m) => m.type === 'follower' && m.at >= cutAt));
    const steppedDown = third.c.messages.find((m) => m.type === 'follower' && m.at >= cutAt)!;
    process.stdout.write(
      `${kind} partitioned leader's loss event fired ${Math.round(fourth.t - steppedDown.t!)} ms before its successor won\n`,
    );
    expect(fourth.token).toBeGreaterThan(third.token);
    third.c.proxy.heal();
    expect((await Promise.all(alive.map(status))).filter(Boolean)).toHaveLength(1);
  }, 120_000);
});
