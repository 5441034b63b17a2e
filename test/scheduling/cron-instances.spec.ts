import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Redis from 'ioredis';
import { RedisServer } from '../support/redis-server';
import { transpiledEnv, transpiledScript } from '../support/transpiled';

/**
 * Three instances of one app with @Cron(EVERY_SECOND), started with offsets of 0, 100 and 200 ms
 * (standing in for clock skew). With @LockedJob (minHold 500) each tick runs exactly once; the
 * control (@Locked onBusy 'skip', no minHold) runs a short job more than once per tick, because it
 * releases before the late instances try.
 */
const OFFSETS = [0, 100, 200];
const TICKS = 6;

/** Every instance spawned, ready or not: stopped in afterAll even when a start timed out. */
const spawned = new Set<ChildProcess>();

function startInstance(
  port: number,
  offset: number,
  mode: string,
  id: number,
): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      transpiledScript(join(__dirname, 'cron-instance.process.ts')),
      String(port),
      String(offset),
      mode,
      String(id),
    ],
    {
      cwd: join(__dirname, '..', '..'),
      env: transpiledEnv(),
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  spawned.add(child);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') resolve(child);
      else if (line.startsWith('error')) reject(new Error(line));
    });
    child.once('exit', (code) =>
      reject(new Error(`instance exited with ${code} before it was ready`)),
    );
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
}

/** Runs per tick second, for the ticks after every instance was ready and before the first stopped. */
async function runsPerTick(
  redis: Redis,
  mode: string,
  from: number,
  to: number,
): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (let t = from; t <= to; t++) counts.set(t, 0);
  for (const entry of await redis.lrange(`runs:${mode}`, 0, -1)) {
    const tick = Number(entry.split(':')[0]);
    if (counts.has(tick)) counts.set(tick, (counts.get(tick) ?? 0) + 1);
  }
  return counts;
}

describe('scheduled jobs on three instances (@nestjs/schedule, real Redis)', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis({ port: server.port, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await Promise.all([...spawned].map(stop));
    redis?.disconnect();
    await server?.destroy();
  });

  /** Both fleets (with and without minHold) run side by side through the same TICKS ticks. */
  let counts: Record<string, number[]>;
  beforeAll(async () => {
    const fleets = ['job', 'control'].flatMap((mode) =>
      OFFSETS.map((o, i) => startInstance(server.port, o, mode, i)),
    );
    const children = await Promise.all(fleets);
    try {
      const from = Math.ceil(Date.now() / 1000) + 1;
      await new Promise((r) => setTimeout(r, (from + TICKS) * 1000 - Date.now() + 600)); // let TICKS whole ticks pass
      const to = from + TICKS - 1;
      counts = {
        job: [...(await runsPerTick(redis, 'job', from, to)).values()],
        control: [...(await runsPerTick(redis, 'control', from, to)).values()],
      };
      process.stdout.write(
        `runs per tick: with minHold ${counts.job.join(' ')}; without ${counts.control.join(' ')}\n`,
      );
    } finally {
      await Promise.all(children.map(stop));
    }
  }, 120_000);

  it('@LockedJob with minHold: exactly one run per tick', () => {
    expect(counts.job).toEqual(Array(TICKS).fill(1));
  });

  it('control without minHold: the late instances run the same tick again', () => {
    expect(counts.control.every((c) => c >= 1)).toBe(true);
    expect(counts.control.filter((c) => c > 1).length).toBeGreaterThan(TICKS / 2);
  });
});
