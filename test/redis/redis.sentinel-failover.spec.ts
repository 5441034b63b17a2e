import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from '../conformance/conformance-tools';
import { RedisSentinelGroup, SENTINEL_MASTER_NAME } from '../support/redis-sentinel';
import { eventually } from '../support/eventually';

/**
 * RedisLockBackend over ioredis Sentinel-managed clients, on a private primary + replica + 3
 * sentinels; the replica replicates through a proxy so the test can slow or cut that link alone.
 * The experiment: owner A takes a lock (ttl 10 s), the primary is SIGKILLed right after the grant,
 * the sentinels promote the replica, and owner B tries the same key on the new primary. A "double
 * grant" is B getting the lock while A's handle is still held: two owners at once. Asynchronous
 * replication loses A's grant whenever the replica had not received it when the primary died; the
 * `replicas` option (WAIT) returns a grant only after the replica acknowledged it.
 * Link conditions: healthy; lagging (50 ms each way); partitioned (nothing gets through).
 */
const LOCK_TTL = 10_000;
let group: RedisSentinelGroup;
let clients: Redis[] = [];
let engines: LockEngine[] = [];

const report = (line: string) => process.stdout.write(`[sentinel failover] ${line}\n`);
const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;

async function sentinelClient(): Promise<Redis> {
  const c = new Redis({
    sentinels: group.sentinelAddresses,
    name: SENTINEL_MASTER_NAME,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 50,
    sentinelRetryStrategy: () => 50,
  });
  c.on('error', () => undefined);
  clients.push(c);
  await c.ping();
  return c;
}

async function engine(replicas?: { count: number; timeout: number }): Promise<LockEngine> {
  const e = new LockEngine({
    backend: new RedisLockBackend({ client: await sentinelClient(), replicas }),
    keyPrefix: 'failover:',
    operationTimeout: 3_000,
  });
  engines.push(e);
  return e;
}

async function cleanup(): Promise<void> {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
  clients.forEach((c) => c.disconnect());
  clients = [];
}

type Link = 'healthy' | 'lagging' | 'partitioned';

interface Round {
  granted: boolean;
  acquireMs: number;
  failoverMs: number;
  /** B got the lock on the new primary. */
  secondGranted: boolean;
  /** ...while A's handle was still held: two owners at once. */
  doubleGrant: boolean;
}

async function failoverRound(
  link: Link,
  replicas?: { count: number; timeout: number },
): Promise<Round> {
  await group.settled();
  const a = await engine(replicas);
  // B is the probe "does the new primary still hold A's lock?": without the option, so that a missing
  // replica (the old primary is dead) cannot refuse B's grant and hide the answer.
  const b = await engine();
  const k = key('lock');
  const primary = group.primary();
  try {
    if (link === 'lagging') group.link.delay = 50;
    if (link === 'partitioned') group.link.blackhole();
    const started = performance.now();
    const held = await a.acquire(k, { ttl: LOCK_TTL, wait: 0 }).catch((e: unknown) => e);
    const acquireMs = performance.now() - started;
    // The primary dies right after the grant (or the refusal).
    await primary.kill();
    const killedAt = performance.now();
    await group.failover();
    const failoverMs = performance.now() - killedAt;
    // B asks the new primary (errors while its client finds the new primary are retried).
    const second = (await eventually(
      async () => {
        try {
          return { handle: await b.tryAcquire(k, { ttl: LOCK_TTL }) };
        } catch {
          return undefined;
        }
      },
      20_000,
      50,
    )) as { handle: LockHandle | null };
    const granted = !(held instanceof Error);
    const doubleGrant = granted && second.handle !== null && (held as LockHandle).held;
    await second.handle?.release().catch(() => undefined);
    return { granted, acquireMs, failoverMs, secondGranted: second.handle !== null, doubleGrant };
  } finally {
    await cleanup();
    await group.restartAsReplica(primary);
  }
}

function summary(name: string, rounds: Round[]) {
  const granted = rounds.filter((r) => r.granted);
  const avg = (xs: number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);
  const doubles = rounds.filter((r) => r.doubleGrant).length;
  report(
    `${name}: ${rounds.length} failovers; A granted in ${granted.length}; second owner got the lock while A held it in ${doubles}/${granted.length}; ` +
      `A's acquire avg ${avg(rounds.map((r) => r.acquireMs)).toFixed(1)} ms (max ${Math.max(...rounds.map((r) => r.acquireMs)).toFixed(1)}); ` +
      `failover avg ${avg(rounds.map((r) => r.failoverMs)).toFixed(0)} ms`,
  );
  return { doubles, granted: granted.length };
}

beforeAll(async () => {
  group = await RedisSentinelGroup.start();
}, 60_000);

afterEach(cleanup);

afterAll(async () => group?.destroy());

describe('RedisLockBackend with Sentinel: replica acknowledgement (option "replicas")', () => {
  // Two of these cut the replication link: each starts with the replica replicating through it.
  beforeEach(() => group.settled(), 60_000);

  it('works over a Sentinel-managed client: grants when the replica acknowledges', async () => {
    const e = await engine({ count: 1, timeout: 1_000 });
    const h = await e.acquire(key('ok'), { wait: 0 });
    expect(group.cli(group.replica().port, 'GET', lockKeys(`failover:${h.key}`).writer)).toBe(
      h.owner,
    );
    await h.extend();
    await h.release();
  });

  it('fails the acquire with LockBackendUnavailableError when no replica confirms, and leaves no lock behind', async () => {
    const e = await engine({ count: 1, timeout: 300 });
    group.link.blackhole();
    try {
      const k = key('noreplica');
      const error = await e.acquire(k, { wait: 0 }).catch((x: unknown) => x);
      expect(error).toBeInstanceOf(LockBackendUnavailableError);
      expect((error as Error).message).toMatch(
        /only 0 of 1 replicas acknowledged the grant within 300 ms \(option "replicas"\)/,
      );
      expect(group.cli(group.primary().port, 'EXISTS', lockKeys(`failover:${k}`).writer)).toBe('0');
      expect(e.heldCount).toBe(0);
    } finally {
      group.link.heal();
    }
  });

  it('a held lock whose renewals no replica confirms is lost (its signal aborts)', async () => {
    const e = await engine({ count: 1, timeout: 100 });
    const h = await e.acquire(key('renew'), { ttl: 600, wait: 0 });
    group.link.blackhole();
    try {
      expect(await untilAborted(h.signal, 10_000)).toBeInstanceOf(LockLostError);
    } finally {
      await h.release().catch(() => undefined);
      group.link.heal();
    }
  });
});

describe('Sentinel failover while a lock is held (measured; ttl 10 s, primary SIGKILLed right after the grant)', () => {
  const ROUNDS = 5;
  const WAIT_FOR_REPLICA = { count: 1, timeout: 2_000 };
  const run = async (link: Link, replicas?: typeof WAIT_FOR_REPLICA) => {
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push(await failoverRound(link, replicas));
    return summary(
      `${link} link, ${replicas ? `replicas { count: ${replicas.count}, timeout: ${replicas.timeout} }` : 'no replicas option'}`,
      rounds,
    );
  };

  it('healthy link, without "replicas"', async () => {
    const { granted } = await run('healthy');
    expect(granted).toBe(ROUNDS);
  }, 90_000);

  it('lagging link (50 ms each way), without "replicas"', async () => {
    const { granted } = await run('lagging');
    expect(granted).toBe(ROUNDS);
  }, 90_000);

  it('lagging link, with "replicas": every grant waited for the replica, so no second owner', async () => {
    const { granted, doubles } = await run('lagging', WAIT_FOR_REPLICA);
    expect(granted).toBe(ROUNDS);
    expect(doubles).toBe(0);
  }, 90_000);

  it('partitioned link, without "replicas": the promoted replica never saw the grant, a second owner gets the lock', async () => {
    const { granted, doubles } = await run('partitioned');
    expect(granted).toBe(ROUNDS);
    // Not every round must show it (A may learn of the loss first, on a slow failover), but it is reliably seen.
    expect(doubles).toBeGreaterThan(0);
  }, 90_000);

  it('partitioned link, with "replicas": no replica acknowledges, so A is refused (fails closed) and nobody holds it twice', async () => {
    const { granted, doubles } = await run('partitioned', WAIT_FOR_REPLICA);
    expect(granted).toBe(0);
    expect(doubles).toBe(0);
  }, 90_000);
});
