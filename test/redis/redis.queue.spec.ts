import { ACQUIRE, lockKeys, RELEASE } from '../../lib/backends/redis/redis.scripts';
import { eventually } from '../support/eventually';
import { redisProcesses } from './redis-fixture';

/**
 * The Redis fair queue with direct handoff, on a real redis-server: FIFO order across processes
 * (a backend with its own connections stands for a process), readers granted together, a writer
 * never overtaken by later readers, a dead waiter skipped at once, and the cost of a handoff in
 * acquire scripts, counted by the server (INFO commandstats) and split by script locally.
 */
const PREFIX = 'q:';
const redis = redisProcesses(PREFIX, { retryStrategy: () => 100 });
const processLike = () => redis.processLike();

const queued = (key: string) => redis.admin.zcard(lockKeys(PREFIX + key).queue);

describe('RedisLockBackend fair queue', () => {
  it('grants in arrival order across processes (FIFO), each handoff by message', async () => {
    const procs = Array.from({ length: 4 }, () => processLike());
    const holder = await procs[0].engine.acquire('fifo');
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 12; i++) {
      const p = procs[(i % 3) + 1];
      waiters.push(p.engine.withLock('fifo', async () => void order.push(i)));
      await eventually(async () => (await queued('fifo')) === i + 1);
    }
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });

  it('readers queued together are granted together; a queued writer is not overtaken by later readers', async () => {
    const [a, b, c] = [processLike(), processLike(), processLike()];
    const writer = await a.engine.acquire('rw');
    const r1 = b.engine.acquire('rw', { mode: 'shared' });
    await eventually(async () => (await queued('rw')) === 1);
    const r2 = c.engine.acquire('rw', { mode: 'shared' });
    await eventually(async () => (await queued('rw')) === 2);
    const w2 = b.engine.acquire('rw');
    await eventually(async () => (await queued('rw')) === 3);
    const r3 = c.engine.acquire('rw', { mode: 'shared' });
    await eventually(async () => (await queued('rw')) === 4);

    await writer.release();
    const [h1, h2] = await Promise.all([r1, r2]);
    expect(h1.held && h2.held).toBe(true);
    // W2 and R3 still wait, in that order; a new reader may not join the readers past W2.
    expect(await queued('rw')).toBe(2);
    await expect(a.engine.acquire('rw', { mode: 'shared', wait: 0 })).rejects.toMatchObject({
      code: 'LOCK_ACQUIRE_TIMEOUT',
    });
    await h1.release();
    expect(await queued('rw')).toBe(2);
    await h2.release();
    const w = await w2;
    expect(w.fencingToken > h2.fencingToken).toBe(true);
    expect(await queued('rw')).toBe(1);
    await w.release();
    const last = await r3;
    expect(last.held).toBe(true);
    await last.release();
    expect(await queued('rw')).toBe(0);
  });

  it('a waiter that dies mid-queue does not block the next one', async () => {
    const [a, b, c] = [processLike(), processLike(), processLike()];
    const holder = await a.engine.acquire('dead', { ttl: 30_000 });
    // B queues first, then "dies": both of its connections close, its queue entry stays behind.
    void b.engine.acquire('dead', { wait: 60_000 }).catch(() => undefined);
    await eventually(async () => (await queued('dead')) === 1);
    const alive = c.engine.acquire('dead', { wait: 60_000 });
    await eventually(async () => (await queued('dead')) === 2);
    b.client.disconnect();
    const dying = b.backend as unknown as { subscriber: { close(): void }; processChannel: string };
    dying.subscriber.close();
    // The server has seen B's connections go (as when its process dies).
    await eventually(
      async () => Number((await redis.admin.pubsub('NUMSUB', dying.processChannel))[1]) === 0,
    );
    await holder.release();
    // B's grant reached nobody (PUBLISH counted 0 receivers): undone in the same script, C served.
    const next = await alive;
    expect(next.held).toBe(true);
    expect(await redis.admin.get(lockKeys(`${PREFIX}dead`).writer)).not.toBeNull();
    expect(await queued('dead')).toBe(0);
    await next.release();
  });

  it('a waiter that gives up leaves the queue, and the lock passes on', async () => {
    const [a, b, c] = [processLike(), processLike(), processLike()];
    const holder = await a.engine.acquire('leave');
    const controller = new AbortController();
    const giving = b.engine.acquire('leave', { signal: controller.signal });
    await eventually(async () => (await queued('leave')) === 1);
    const staying = c.engine.acquire('leave');
    await eventually(async () => (await queued('leave')) === 2);
    controller.abort(new Error('no longer needed'));
    await expect(giving).rejects.toThrow('no longer needed');
    expect(await queued('leave')).toBe(1);
    await holder.release();
    await (await staying).release();
  });

  it('32 looping workers over 8 processes (4 each): strict rotation, no worker served more than once ahead of another', async () => {
    // Regression of the least-served share of 0.80 at 32 workers: counted, not timed. With a FIFO
    // queue and a worker rejoining at the tail after each release, any prefix of the grant sequence
    // serves every worker floor or ceil of (grants / workers) times.
    const procs = Array.from({ length: 8 }, () => processLike());
    const WORKERS = 32;
    const TOTAL = WORKERS * 12;
    const grants = new Array<number>(WORKERS).fill(0);
    let total = 0;
    let inside = 0;
    let overlap = false;
    let worst = 0;
    const worker = async (w: number) => {
      while (total < TOTAL) {
        await procs[w % 8].engine.withLock('rotation', async () => {
          if (++inside > 1) overlap = true;
          if (total < TOTAL) {
            grants[w]++;
            total++;
            // Checked after every grant once each worker has joined (the first round's order is arrival).
            if (total >= WORKERS)
              worst = Math.max(worst, Math.max(...grants) - Math.min(...grants));
          }
          await new Promise((r) => setImmediate(r));
          inside--;
        });
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    process.stdout.write(
      `[redis queue] 32 workers, ${TOTAL} grants: per worker ${grants.join(' ')}\n`,
    );
    expect(overlap).toBe(false);
    expect(Math.min(...grants)).toBeGreaterThanOrEqual(TOTAL / WORKERS - 1);
    expect(worst).toBeLessThanOrEqual(2);
  });

  for (const n of [100, 200, 400]) {
    it(`${n} waiters: at most 2.5 acquire scripts per handoff: the queued one and the confirming one (counted on the server)`, async () => {
      const procs = Array.from({ length: 4 }, () => processLike());
      const holder = await procs[0].engine.acquire(`herd${n}`);
      const bySha = new Map<string, number>();
      const spies = procs.map((p) => {
        const original = p.client.evalsha.bind(p.client);
        return jest.spyOn(p.client, 'evalsha').mockImplementation(((
          sha: string,
          ...rest: never[]
        ) => {
          bySha.set(sha, (bySha.get(sha) ?? 0) + 1);
          return (original as (...a: unknown[]) => Promise<unknown>)(sha, ...rest);
        }) as never);
      });
      await redis.admin.config('RESETSTAT');
      let inside = 0;
      let overlap = false;
      const done = Array.from({ length: n }, (_, i) =>
        procs[i % 4].engine.withLock(`herd${n}`, async () => {
          if (++inside > 1) overlap = true;
          await Promise.resolve();
          inside--;
        }),
      );
      await eventually(async () => (await queued(`herd${n}`)) === n, 30_000);
      await holder.release();
      await Promise.all(done);
      spies.forEach((s) => s.mockRestore());
      const info = await redis.admin.info('commandstats');
      const serverScripts = [...info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)].reduce(
        (sum, m) => sum + Number(m[2]),
        0,
      );
      const acquires = bySha.get(ACQUIRE.sha) ?? 0;
      const releases = bySha.get(RELEASE.sha) ?? 0;
      process.stdout.write(
        `[redis queue] ${n} waiters: ${acquires} acquire scripts (${(acquires / n).toFixed(3)} per handoff), ${releases} releases, ${serverScripts} scripts on the server\n`,
      );
      expect(overlap).toBe(false);
      // Everything the server ran went through the counted clients (no hidden script calls).
      expect(serverScripts).toBe([...bySha.values()].reduce((a, b) => a + b, 0));
      // A waiter queues (one script) and, woken by its handoff's message, confirms the grant on
      // the server (one more): a message is never taken as a grant. Waiters also re-check every
      // RECHECK_MS (5 s): a long line on a busy machine adds some of those, no herd.
      expect(acquires / n).toBeLessThanOrEqual(2.5);
      expect(releases).toBe(n + 1);
    });
  }
});
