import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { RedisServer } from '../support/redis-server';

/**
 * Leader election across processes over a real Redis: a leader killed or paused past its ttl is
 * replaced, and a paused leader that resumes knows at once that it no longer leads (never two
 * that both believe it). Failover times are printed, not asserted.
 */
const TTL = 600;

interface Campaigner {
  child: ChildProcess;
  messages: { type: string; leader?: boolean; token?: string; at: number }[];
}

function start(port: number): Promise<Campaigner> {
  const child = fork(join(__dirname, 'leader.process.ts'), [String(port), String(TTL)], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    cwd: join(__dirname, '..', '..'),
  });
  const c: Campaigner = { child, messages: [] };
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
  timeoutMs = 15_000,
): Promise<{ c: Campaigner; at: number }> {
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
  if (c.child.exitCode !== null || c.child.signalCode !== null) return;
  const gone = new Promise((r) => c.child.once('exit', r));
  c.child.kill('SIGCONT');
  c.child.kill('SIGKILL');
  await gone;
}

describe('leader election across processes (Redis)', () => {
  let server: RedisServer;
  let fleet: Campaigner[] = [];
  beforeAll(async () => {
    server = await RedisServer.start();
    fleet = await Promise.all([0, 1, 2].map(() => start(server.port)));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(fleet.map(kill));
    await server?.destroy();
  });

  it('one leader; killed, it is replaced; paused past its ttl, it is replaced and knows it on resuming', async () => {
    const first = await nextLeader(fleet, 0);
    const beliefs = await Promise.all(fleet.map(status));
    expect(beliefs.filter(Boolean)).toHaveLength(1);

    const killedAt = performance.now();
    await kill(first.c);
    const alive = fleet.filter((c) => c !== first.c);
    const second = await nextLeader(alive, killedAt);
    process.stdout.write(
      `failover after SIGKILL: ${Math.round(second.at - killedAt)} ms (ttl ${TTL})\n`,
    );
    expect((await Promise.all(alive.map(status))).filter(Boolean)).toHaveLength(1);
    expect(
      BigInt(second.c.messages.find((m) => m.type === 'leader' && m.at === second.at)?.token ?? 0),
    ).toBeGreaterThan(BigInt(first.c.messages.find((m) => m.type === 'leader')?.token ?? 0));

    const pausedAt = performance.now();
    second.c.child.kill('SIGSTOP');
    const third = await nextLeader(
      alive.filter((c) => c !== second.c),
      pausedAt,
    );
    process.stdout.write(
      `failover after SIGSTOP: ${Math.round(third.at - pausedAt)} ms (ttl ${TTL})\n`,
    );
    second.c.child.kill('SIGCONT');
    // Resumed past its validity: its first answer already says it does not lead.
    expect(await status(second.c)).toBe(false);
    expect(await status(third.c)).toBe(true);
  }, 60_000);
});
