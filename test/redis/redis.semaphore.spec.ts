import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import {
  SEM_ACQUIRE,
  SEM_PERMIT_FREE,
  SEM_RELEASE,
  semaphoreKeys,
} from '../../lib/backends/redis/redis.semaphore-scripts';
import type { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { eventually } from '../support/eventually';
import { redisProcesses } from './redis-fixture';

/**
 * Native Redis semaphores (`permits: N`) on a real redis-server: at most N holders across
 * processes (a backend with its own connections stands for a process) with every permit used, FIFO
 * waiters woken one per freed permit (scripts counted per sha and on the server), an expired permit
 * reclaimed, owner-checked release and renewal, Curator's rule for holders that disagree on N,
 * growing tokens, inspect/forceRelease over the permit layout, marked permits (a release is one
 * ZREM while nobody queues), and sole permits (an uncontended permit reads no clock).
 */
const PREFIX = 's:';
const redis = redisProcesses(PREFIX);
const processLike = () => redis.processLike();

const queued = (key: string) => redis.admin.zcard(semaphoreKeys(PREFIX + key).queue);
const heldCount = (key: string) => redis.admin.zcard(semaphoreKeys(PREFIX + key).permits);
const owner = () => randomBytes(16).toString('hex');
const never = new AbortController().signal;
const attempt = (key: string, permits: number, ttl = 30_000) => ({
  key: PREFIX + key,
  owner: owner(),
  mode: 'exclusive' as const,
  ttl,
  permits,
  signal: never,
  onLost: () => undefined,
});

/** One permit attempt on the backend's native semaphore, with the request's own N. */
const tryPermit = (b: RedisLockBackend, request: ReturnType<typeof attempt>) =>
  b.semaphore.tryAcquire(request, request.permits);

/** Counts each process's scripts by sha. */
function countScripts(procs: { client: Redis }[]): { bySha: Map<string, number>; stop(): void } {
  const bySha = new Map<string, number>();
  const spies = procs.map((p) => {
    const original = p.client.evalsha.bind(p.client);
    return jest.spyOn(p.client, 'evalsha').mockImplementation(((sha: string, ...rest: never[]) => {
      bySha.set(sha, (bySha.get(sha) ?? 0) + 1);
      return (original as (...a: unknown[]) => Promise<unknown>)(sha, ...rest);
    }) as never);
  });
  return { bySha, stop: () => spies.forEach((s) => s.mockRestore()) };
}

describe('RedisLockBackend native semaphore', () => {
  it('extend() of a permit renews the permit (it renewed the lock of the key instead, and lost the permit)', async () => {
    const { engine } = processLike();
    const permit = await engine.acquire('extend-permit', { permits: 2, ttl: 2_000, wait: 0 });
    await permit.extend(20_000);
    expect(permit.held).toBe(true);
    const score = await redis.admin.zscore(
      semaphoreKeys(PREFIX + 'extend-permit').permits,
      permit.owner,
    );
    expect(score).not.toBeNull();
    await permit.release();
    expect(await heldCount('extend-permit')).toBe(0);
  });

  it('at most N hold across 4 processes under load, all N permits used, tokens all distinct', async () => {
    const procs = Array.from({ length: 4 }, () => processLike());
    let inside = 0;
    let most = 0;
    const tokens: bigint[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let i = 0; i < 5; i++) {
          await procs[w % 4].engine.withLock(
            'load',
            async (h) => {
              tokens.push(h.fencingToken);
              most = Math.max(most, ++inside);
              await new Promise((r) => setTimeout(r, 5));
              inside--;
            },
            { permits: 3 },
          );
        }
      }),
    );
    expect(tokens).toHaveLength(80);
    expect(new Set(tokens).size).toBe(80);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBe(3);
    expect(await heldCount('load')).toBe(0);
    expect(await queued('load')).toBe(0);
  });

  it('waiters are served in arrival order, one per freed permit, with two acquire scripts each (queue, confirm)', async () => {
    const procs = Array.from({ length: 4 }, () => processLike());
    const held = [
      await procs[0].engine.acquire('fifo', { permits: 2 }),
      await procs[0].engine.acquire('fifo', { permits: 2 }),
    ];
    const counted = countScripts(procs);
    await redis.admin.config('RESETSTAT');
    const order: number[] = [];
    const handles: Promise<{ release(): Promise<void>; fencingToken: bigint }>[] = [];
    for (let i = 0; i < 8; i++) {
      handles.push(
        procs[(i % 3) + 1].engine.acquire('fifo', { permits: 2 }).then((h) => {
          order.push(i);
          return h;
        }),
      );
      await eventually(async () => (await queued('fifo')) === i + 1);
    }
    // One release frees one permit: exactly one waiter (the first) is granted.
    await held[0].release();
    await eventually(() => order.length === 1);
    expect(await queued('fifo')).toBe(7);
    expect(order).toEqual([0]);
    await held[1].release();
    await eventually(() => order.length === 2);
    // Each release frees one permit, and the next waiter's grant is awaited before the next
    // release: otherwise two woken waiters race to resolve on the client, whatever order the server
    // chose.
    for (let i = 0; i < 6; i++) {
      await (await handles[i]).release();
      await eventually(() => order.length === i + 3);
    }
    await Promise.all(handles.slice(6).map(async (h) => (await h).release()));
    counted.stop();
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const tokens = await Promise.all(handles.map(async (h) => (await h).fencingToken));
    for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
    // Each waiter ran TWO acquire scripts: its queued attempt, and the re-check that confirms the
    // grant its message announced (a message only wakes). Before them, each waiting process's
    // first attempt ran the short free-permit script once, found permits held, and remembered the
    // key as busy: its later waiters went to SEM_ACQUIRE at once. That first waiter came before its
    // process's subscription was live, so it made one plain attempt (SEM_ACQUIRE, not queued)
    // while the subscription was on its way: 3 more.
    expect(counted.bySha.get(SEM_ACQUIRE.sha)).toBe(8 * 2 + 3);
    expect(counted.bySha.get(SEM_PERMIT_FREE.sha)).toBe(3);
    expect(counted.bySha.get(SEM_RELEASE.sha)).toBe(10);
    const info = await redis.admin.info('commandstats');
    const onServer = [...info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)].reduce(
      (s, m) => s + Number(m[2]),
      0,
    );
    // Everything the server ran went through the counted clients (no hidden script calls).
    expect(onServer).toBe([...counted.bySha.values()].reduce((x, y) => x + y, 0));
  });

  it('a permit whose holder went silent expires and goes to a waiter with a larger token', async () => {
    const a = processLike();
    const b = processLike();
    const silent = await tryPermit(a.backend, attempt('expire', 2, 300));
    const other = await tryPermit(a.backend, attempt('expire', 2, 30_000));
    expect(silent.acquired && other.acquired).toBe(true);
    const started = performance.now();
    const next = await b.engine.acquire('expire', { permits: 2, wait: 10_000 });
    expect(performance.now() - started).toBeGreaterThan(150);
    expect(next.fencingToken > (silent as { fencingToken: bigint }).fencingToken).toBe(true);
    expect(next.fencingToken > (other as { fencingToken: bigint }).fencingToken).toBe(true);
    expect(await heldCount('expire')).toBe(2);
    await next.release();
  });

  it('release and renew act only for the owner', async () => {
    const { backend } = processLike();
    const mine = attempt('owner', 2);
    expect((await tryPermit(backend, mine)).acquired).toBe(true);
    const stranger = { ...mine, owner: owner() };
    await backend.semaphore.release(stranger);
    expect(await backend.semaphore.renew([stranger, mine])).toEqual([false, true]);
    expect(await heldCount('owner')).toBe(1);
    await backend.semaphore.release(mine);
    expect(await heldCount('owner')).toBe(0);
    expect(await backend.semaphore.renew([mine])).toEqual([false]);
  });

  it('marked permits: one ZREM releases while nobody queues; permits held when a waiter queues are marked, still renewed, and released by the script, which serves the waiter', async () => {
    const a = processLike();
    const b = processLike();
    const set = semaphoreKeys(PREFIX + 'mark').permits;
    const members = async () => (await redis.admin.zrange(set, '0', '-1')).sort();
    const counted = countScripts([a, b]);
    // Nobody queued: the permit's member is its owner, and its release is one ZREM (no script).
    const alone = await a.engine.acquire('mark', { permits: 2 });
    expect(await members()).toEqual([alone.owner]);
    await alone.release();
    expect(await heldCount('mark')).toBe(0);
    expect(counted.bySha.get(SEM_RELEASE.sha)).toBeUndefined();
    // Two holders with a short ttl; a waiter queues, and that marks both permits.
    const h1 = await a.engine.acquire('mark', { permits: 2, ttl: 600 });
    const h2 = await a.engine.acquire('mark', { permits: 2, ttl: 600 });
    const waiting = b.engine.acquire('mark', { permits: 2 });
    await eventually(async () => (await queued('mark')) === 1);
    expect(await members()).toEqual([`~${h1.owner}`, `~${h2.owner}`].sort());
    // The watchdog renews a marked permit: its expiry moves on, and neither holder is lost.
    const expiry = Number(await redis.admin.zscore(set, `~${h1.owner}`));
    await eventually(async () => Number(await redis.admin.zscore(set, `~${h1.owner}`)) > expiry);
    expect(h1.signal.aborted || h2.signal.aborted).toBe(false);
    // h1's ZREM finds no plain permit; the release script frees the marked one and serves the
    // waiter, whose permit is marked too (granted by a handoff).
    await h1.release();
    const w = await waiting;
    expect(counted.bySha.get(SEM_RELEASE.sha)).toBe(1);
    expect(await members()).toEqual([`~${h2.owner}`, `~${w.owner}`].sort());
    await Promise.all([h2.release(), w.release()]);
    expect(await heldCount('mark')).toBe(0);
    counted.stop();
  });

  it('sole permits: an uncontended permit scores inf and expires with its set; inspect and a busy hint read the set; the next script gives it its expiry', async () => {
    const a = processLike();
    const set = semaphoreKeys(PREFIX + 'lone').permits;
    const first = attempt('lone', 3, 20_000);
    expect((await tryPermit(a.backend, first)).acquired).toBe(true);
    expect(await redis.admin.zscore(set, first.owner)).toBe('inf');
    const setTtl = await redis.admin.pttl(set);
    expect(setTtl).toBeGreaterThan(19_000);
    expect(setTtl).toBeLessThanOrEqual(20_001);
    // inspect reads the permit's ms left off the set's expiry, and writes nothing.
    const seen = await a.backend.inspect(PREFIX + 'lone');
    expect(seen.holders.map((h) => h.owner)).toEqual([first.owner]);
    expect(seen.holders[0].remainingTtl).toBeGreaterThan(19_000);
    expect(seen.holders[0].remainingTtl).toBeLessThanOrEqual(20_000);
    expect(await redis.admin.zscore(set, first.owner)).toBe('inf');
    // A request for 1 permit finds it busy (the full script ran): the permit now has its expiry,
    // the set's less 1 ms, and the hint is the ms until then.
    const busy = await tryPermit(a.backend, attempt('lone', 1));
    expect(busy.acquired).toBe(false);
    const retryAfter = busy.acquired ? undefined : busy.retryAfter;
    expect(retryAfter).toBeGreaterThan(19_000);
    expect(retryAfter).toBeLessThanOrEqual(20_000);
    // The set's ms left, read before the server's clock: the permit's expiry is at most the set's.
    const setLeft = await redis.admin.pttl(set);
    const [sec, usec] = await redis.admin.time();
    const serverMs = Number(sec) * 1000 + Number(usec) / 1000;
    const expiry = Number(await redis.admin.zscore(set, first.owner));
    expect(expiry - serverMs).toBeGreaterThan(19_000);
    expect(expiry - serverMs).toBeLessThanOrEqual(setLeft + 1);
    // A second permit keeps the first one's expiry, and the set outlives both.
    const second = attempt('lone', 3, 5_000);
    expect((await tryPermit(a.backend, second)).acquired).toBe(true);
    expect(Number(await redis.admin.zscore(set, first.owner))).toBe(expiry);
    await a.backend.semaphore.release(first);
    await a.backend.semaphore.release(second);
    expect(await heldCount('lone')).toBe(0);
    // A silent holder's sole permit goes with its set, and the key is free again.
    const silent = attempt('lone-silent', 2, 300);
    const silentGrant = await tryPermit(a.backend, silent);
    expect(silentGrant.acquired).toBe(true);
    expect(await redis.admin.zscore(semaphoreKeys(silent.key).permits, silent.owner)).toBe('inf');
    await eventually(async () => (await heldCount('lone-silent')) === 0);
    const next = await processLike().engine.acquire('lone-silent', { permits: 1 });
    expect(next.fencingToken > (silentGrant as { fencingToken: bigint }).fencingToken).toBe(true);
    await next.release();
    // Its holder's renewal gives a sole permit its expiry (no other script needs to).
    const renewed = attempt('lone-renew', 2, 20_000);
    expect((await tryPermit(a.backend, renewed)).acquired).toBe(true);
    const renewSet = semaphoreKeys(renewed.key).permits;
    expect(await redis.admin.zscore(renewSet, renewed.owner)).toBe('inf');
    expect(await a.backend.semaphore.renew([renewed])).toEqual([true]);
    // The set's ms left, read before the server's clock: the set outlives the renewed permit.
    const renewSetLeft = await redis.admin.pttl(renewSet);
    const [rs, rus] = await redis.admin.time();
    const renewedExpiry = Number(await redis.admin.zscore(renewSet, renewed.owner));
    const renewedLeft = renewedExpiry - (Number(rs) * 1000 + Number(rus) / 1000);
    expect(renewedLeft).toBeGreaterThan(19_000);
    expect(renewedLeft).toBeLessThanOrEqual(20_000);
    expect(renewSetLeft).toBeGreaterThanOrEqual(renewedLeft);
    await a.backend.semaphore.release(renewed);
  });

  it('a busy answer carries the ms until the earliest permit expires (a waiter sleeps that long)', async () => {
    const { backend } = processLike();
    expect((await tryPermit(backend, attempt('hint', 2, 20_000))).acquired).toBe(true);
    expect((await tryPermit(backend, attempt('hint', 2, 8_000))).acquired).toBe(true);
    const busy = await tryPermit(backend, attempt('hint', 2));
    expect(busy.acquired).toBe(false);
    const retryAfter = busy.acquired ? undefined : busy.retryAfter;
    expect(retryAfter).toBeGreaterThan(7_000);
    expect(retryAfter).toBeLessThanOrEqual(8_000);
  });

  it("Curator's rule: a request counts the holders against its own N", async () => {
    const { backend } = processLike();
    expect((await tryPermit(backend, attempt('rule', 3))).acquired).toBe(true);
    expect((await tryPermit(backend, attempt('rule', 3))).acquired).toBe(true);
    expect((await tryPermit(backend, attempt('rule', 2))).acquired).toBe(false);
    expect((await tryPermit(backend, attempt('rule', 3))).acquired).toBe(true);
    expect((await tryPermit(backend, attempt('rule', 3))).acquired).toBe(false);
    expect((await tryPermit(backend, attempt('rule', 4))).acquired).toBe(true);
  });

  it('inspect shows permits and waiters; forceRelease frees every permit and their holders learn', async () => {
    const a = processLike();
    const b = processLike();
    const h1 = await a.engine.acquire('ops', { permits: 2, ttl: 900 });
    const h2 = await a.engine.acquire('ops', { permits: 2, ttl: 900 });
    const waiting = b.engine.acquire('ops', { permits: 2 });
    await eventually(async () => (await queued('ops')) === 1);
    const view = await a.backend.inspect(`${PREFIX}ops`);
    expect(view).toMatchObject({ held: true, mode: 'exclusive', waiters: 1 });
    expect(view.holders.map((h) => h.owner).sort()).toEqual([h1.owner, h2.owner].sort());
    expect(view.fencingToken).toBe(h2.fencingToken);
    expect(await a.backend.forceRelease(`${PREFIX}ops`)).toBe(true);
    // The queued waiter is served at once; the old holders' next renewals find their permits gone.
    const w = await waiting;
    expect(w.fencingToken > h2.fencingToken).toBe(true);
    await eventually(() => h1.signal.aborted && h2.signal.aborted, 10_000);
    expect(h1.signal.reason).toBeInstanceOf(LockLostError);
    await Promise.all([h1.release(), h2.release(), w.release()]);
    expect((await a.backend.inspect(`${PREFIX}ops`)).held).toBe(false);
  });

  it('a waiter that gives up leaves the queue, and the freed permit goes to the next one', async () => {
    const [a, b, c] = [processLike(), processLike(), processLike()];
    const holder = await a.engine.acquire('leave', { permits: 2 });
    const holder2 = await a.engine.acquire('leave', { permits: 2 });
    const controller = new AbortController();
    const giving = b.engine.acquire('leave', { permits: 2, signal: controller.signal });
    await eventually(async () => (await queued('leave')) === 1);
    const staying = c.engine.acquire('leave', { permits: 2 });
    await eventually(async () => (await queued('leave')) === 2);
    controller.abort(new Error('no longer needed'));
    await expect(giving).rejects.toThrow('no longer needed');
    expect(await queued('leave')).toBe(1);
    await holder.release();
    const s = await staying;
    expect(await heldCount('leave')).toBe(2);
    await Promise.all([s.release(), holder2.release()]);
  });
});
