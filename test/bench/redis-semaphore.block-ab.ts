import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { RedisServer } from '../support/redis-server';
import { redisSemaphore } from './bench.competitors';
import { redisClient } from './bench.contenders';
import { BenchServers } from './bench.servers';
import { connect, oursOver, type Client, type OurClasses } from './semaphore.scenario';

/**
 * Diagnosis (not a test; nothing asserts a time): the uncontended Redis semaphore cycle of one or
 * more copies of lib/ against redis-semaphore's `Semaphore`, the rows taking turns every BLOCK
 * cycles (100: about 10 ms) on one private redis-server, for SECS seconds. On a VM whose speed
 * drifts by ±10 % within a minute, the semaphore scenario's slices (about a second each) leave a
 * run's ratio a few points off; blocks this short share every drift, and two runs of this agree
 * within a point. Each copy of lib/ must live under the project (for node_modules), for example
 * one made with `git archive <commit> lib | tar -x -C .tmp/old`:
 *
 *   LIBS=.tmp/old/lib,lib SECS=60 [CALLS=1] npx ts-node --transpile-only \
 *     test/bench/redis-semaphore.block-ab.ts
 *
 * CALLS=1 adds the scenario's `scripts-only` and `their-calls` rows (the two floors). LOCK=1 runs
 * the plain lock instead, against redis-semaphore's `Mutex`; NEWKEY=1 takes a new key every cycle
 * (as the uncontended scenario does: a new key's fence is created, with `TIME` and a `SET`). Each row
 * also shows the CPU it cost per cycle: this process's (user and system, process.cpuUsage) and
 * redis-server's (utime + stime from /proc, in clock ticks of 10 ms: exact only summed over many
 * blocks, which is what it is).
 */
type Row = [name: string, client: Client];

const LOCK = !!process.env.LOCK;
const NEWKEY = !!process.env.NEWKEY;

function ours(dir: string, port: number): Client {
  // This copy's classes (its own module graph: nothing shared with another copy).
  const { LockEngine } = require(`${dir}/core/lock-engine`) as OurClasses;
  const { RedisLockBackend } = require(`${dir}/backends/redis/redis.backend`) as OurClasses;
  const classes = { LockEngine, RedisLockBackend };
  return LOCK ? oursOver(redisClient(port), classes, null) : oursOver(redisClient(port), classes);
}

/** redis-semaphore's `Mutex` (LOCK=1), as the uncontended scenario runs it. */
async function mutex(port: number): Promise<Client> {
  const c = await redisSemaphore.connect(BenchServers.attached({ redis: port }));
  return { take: (key) => c.lock(key), close: () => c.close() };
}

/** CPU µs used so far by process `pid` (Linux /proc; 0 where there is none). */
function cpuOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime + stime, 100 ticks/s
  } catch {
    return 0;
  }
}

let serial = 0;

async function cycles(c: Client, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const release = await c.take(NEWKEY ? `block-ab:${serial++}` : 'block-ab');
    await release();
  }
}

async function main(): Promise<void> {
  const libs = (process.env.LIBS ?? 'lib').split(',').map((d) => resolve(d));
  const secs = Number(process.env.SECS ?? 40);
  const block = Number(process.env.BLOCK ?? 100);
  const server = await RedisServer.start();
  const rows: Row[] = libs.map((dir, i) => [`ours ${i} (${dir})`, ours(dir, server.port)]);
  if (LOCK) rows.push(['redis-semaphore Mutex', await mutex(server.port)]);
  else rows.push(['redis-semaphore', connect('redis-semaphore', server.port)]);
  if (process.env.CALLS && !LOCK) {
    rows.push(['scripts-only', connect('scripts-only', server.port)]);
    rows.push(['their-calls', connect('their-calls', server.port)]);
  }
  const ms = rows.map(() => 0);
  const counts = rows.map(() => 0);
  const cpu = rows.map(() => ({ user: 0, system: 0, server: 0 }));
  const serverPid = server.child?.pid;
  try {
    for (const [, c] of rows) await cycles(c, 3_000); // warm: V8 optimizes each row's code
    const end = performance.now() + secs * 1_000;
    for (let turn = 0; performance.now() < end; turn++) {
      for (let k = 0; k < rows.length; k++) {
        const j = (k + turn) % rows.length; // each row leads in turn
        const s0 = cpuOf(serverPid);
        const c0 = process.cpuUsage();
        const t = performance.now();
        await cycles(rows[j][1], block);
        ms[j] += performance.now() - t;
        const used = process.cpuUsage(c0);
        cpu[j].user += used.user;
        cpu[j].system += used.system;
        cpu[j].server += cpuOf(serverPid) - s0;
        counts[j] += block;
      }
    }
  } finally {
    for (const [, c] of rows) await c.close();
    await server.kill();
  }
  const us = ms.map((m, j) => (m * 1_000) / counts[j]);
  const theirs = us[libs.length];
  const per = (total: number, j: number) => (total / counts[j]).toFixed(1);
  rows.forEach(([name], j) =>
    console.log(
      `${name.padEnd(40)} ${us[j].toFixed(2)} µs/cycle, rate ÷ theirs ${(theirs / us[j]).toFixed(3)}; ` +
        `CPU µs/cycle: this process ${per(cpu[j].user, j)} user + ${per(cpu[j].system, j)} system, ` +
        `redis-server ${per(cpu[j].server, j)}`,
    ),
  );
}

void main();
