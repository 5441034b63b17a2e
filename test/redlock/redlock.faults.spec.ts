import { randomBytes } from 'node:crypto';
import { LockEngine } from '../../lib/core/lock-engine';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { MutexProbe, untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { RedlockMasters } from './redlock.servers';

/**
 * Redlock under real faults on 5 private redis-server masters: SIGKILL of a minority and of a
 * majority (with locks held and waiters waiting), restarts (masters come back empty, as without
 * persistence), and a master SIGSTOPped for longer than the ttl. Timings are printed, not asserted.
 */
const TTL = 600;
let masters: RedlockMasters;
let engines: LockEngine[] = [];

const key = (what: string) => `${what}:${randomBytes(4).toString('hex')}`;
async function engine(
  options: Parameters<RedlockMasters['backend']>[0] = {},
  ttl = TTL,
): Promise<LockEngine> {
  const e = new LockEngine({
    backend: await masters.backend(options),
    keyPrefix: 'fault:',
    defaults: { ttl, wait: 10_000 },
    operationTimeout: 1_000,
  });
  engines.push(e);
  return e;
}
const report = (line: string) => process.stdout.write(`[redlock faults] ${line}\n`);

/** `workers` contenders on 2 engines run `rounds` critical sections each on one key, with `during` injected midway. */
async function contend(k: string, workers: number, rounds: number, during: () => Promise<void>) {
  const [a, b] = [await engine(), await engine()];
  const probe = new MutexProbe();
  const work = Promise.all(
    Array.from({ length: workers }, (_, i) =>
      (async () => {
        for (let r = 0; r < rounds; r++)
          await (i % 2 ? b : a).withLock(k, () => probe.criticalSection(), { wait: 20_000 });
      })(),
    ),
  );
  // A worker's failure must surface from `await work`, not as an unhandled rejection meanwhile.
  const failed = work.then(
    () => undefined,
    (error: unknown) => error,
  );
  await eventually(() => probe.counter >= 5, 20_000);
  await during();
  const error = await failed;
  if (error) throw error;
  return probe;
}

beforeEach(async () => {
  masters = await RedlockMasters.start(5);
});

afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
  await masters.destroy();
});

describe('redlock on 5 masters: faults', () => {
  it('kill 2 of 5 while a lock is held and waiters wait: exclusion holds, the held lock survives, new acquires succeed', async () => {
    const holder = await engine();
    const held = await holder.acquire(key('held'));
    const probe = await contend(key('busy'), 6, 6, async () => {
      await Promise.all([masters.servers[0].kill(), masters.servers[3].kill()]);
    });
    expect(probe.maxConcurrent).toBe(1);
    expect(probe.counter).toBe(36);
    // Several renewals (every ttl/3) have run against the 3 survivors by now.
    expect(held.held).toBe(true);
    expect(held.signal.aborted).toBe(false);
    const started = performance.now();
    const fresh = await (await engine()).acquire(key('fresh'), { wait: 0 });
    report(`acquire with 2 of 5 masters dead: ${(performance.now() - started).toFixed(1)} ms`);
    expect(fresh.held).toBe(true);
    await fresh.release();
    // The dead masters come back empty: the held lock still lives on 3, so nobody else can take it.
    await Promise.all([masters.servers[0].start(), masters.servers[3].start()]);
    expect(await (await engine()).tryAcquire(held.key)).toBeNull();
    expect(held.held).toBe(true);
    await held.release();
  });

  it('kill 3 of 5: acquires fail with LockBackendUnavailableError (not a timeout) within the wait budget, held locks signal loss; a restart heals without a new app', async () => {
    const a = await engine();
    const b = await engine();
    const heldKey = key('held');
    const held = await a.acquire(heldKey);
    const waiter = b.acquire(heldKey, { wait: 1_500 });
    waiter.catch(() => undefined);
    let lostAt = 0;
    held.signal.addEventListener('abort', () => (lostAt = performance.now()), { once: true });
    const killedAt = performance.now();
    await Promise.all([0, 2, 4].map((i) => masters.servers[i].kill()));

    const started = performance.now();
    const failure = await b.acquire(key('down'), { wait: 500 }).catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(failure).toBeInstanceOf(LockBackendUnavailableError);
    // 2 masters live; on a loaded machine one of them may also miss the round: fewer than a majority either way.
    expect((failure as Error).message).toMatch(
      /only [0-2] of 5 masters answered, a majority of 3 is needed/,
    );
    // The deadline contract (max(wait + 100, operationTimeout)), with slack for a loaded machine: not a speed claim.
    expect(took).toBeLessThan(6_000);
    const tryOnce = await b.tryAcquire(key('down0')).catch((e: unknown) => e);
    expect(tryOnce).toBeInstanceOf(LockBackendUnavailableError);
    await expect(waiter).rejects.toBeInstanceOf(LockBackendUnavailableError);

    const reason = await untilAborted(held.signal, 10 * TTL);
    const lostAfter = lostAt - killedAt;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(held.held).toBe(false);
    report(
      `3 of 5 dead: acquire(wait 500) failed after ${took.toFixed(0)} ms; held lock (ttl ${TTL}) signalled loss ${lostAfter.toFixed(0)} ms after the kill`,
    );
    await held.release();

    await Promise.all([0, 2, 4].map((i) => masters.servers[i].start()));
    const healedAt = performance.now();
    const again = await eventually(() => b.acquire(key('after'), { wait: 1_000 }), 30_000, 50);
    report(
      `after restarting the 3 masters: first acquire succeeded ${(performance.now() - healedAt).toFixed(0)} ms later`,
    );
    expect(again.held).toBe(true);
    await again.release();
    const h2 = await a.acquire(heldKey, { wait: 2_000 });
    await h2.release();
  });

  it('a busy lock is a timeout, an unreachable majority is unavailability: the errors tell them apart', async () => {
    const a = await engine();
    const b = await engine();
    const k = key('which');
    const h = await a.acquire(k);
    await expect(b.acquire(k, { wait: 0 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await expect(b.acquire(k, { wait: 200 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    // 2 of 5 dead still leaves 3 answers saying "busy": still a timeout, not unavailability.
    await Promise.all([1, 2].map((i) => masters.servers[i].kill()));
    await expect(b.acquire(k, { wait: 200 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await masters.servers[3].kill();
    await expect(b.acquire(k, { wait: 200 })).rejects.toThrow(/only [0-2] of 5 masters answered/);
    await h.release().catch(() => undefined);
  });

  it('SIGSTOP one master for longer than the ttl: no double grant while contenders race, and the lock held through it survives', async () => {
    const holder = await engine();
    const held = await holder.acquire(key('held'));
    const stopped = masters.servers[2];
    let pausedFor = 0;
    const probe = await contend(key('stop'), 6, 8, async () => {
      stopped.pause();
      const at = performance.now();
      // Longer than the ttl: keys on the frozen master expire by wall clock while its commands queue up.
      await eventually(() => performance.now() - at > 2.5 * TTL, 10_000, 50);
      stopped.resume();
      pausedFor = performance.now() - at;
    });
    report(
      `one master SIGSTOPped for ${pausedFor.toFixed(0)} ms (ttl ${TTL}) during 48 contended sections: max concurrent holders ${probe.maxConcurrent}`,
    );
    expect(probe.maxConcurrent).toBe(1);
    expect(probe.counter).toBe(48);
    expect(held.held).toBe(true);
    expect(await (await engine()).tryAcquire(held.key)).toBeNull();
    await held.release();
  });

  it("a herd of waiters does not livelock on a frozen minority (regression: waiters woken together split the vote, or saw each other's partial grants as busy, round after round)", async () => {
    // Default ttl (30 s): only the waiters' own retries can move things along, not expiry.
    const [a, b] = [await engine({}, 30_000), await engine({}, 30_000)];
    const k = key('herd');
    masters.servers[4].pause();
    try {
      const probe = new MutexProbe();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (async () => {
            for (let r = 0; r < 10; r++)
              await (i % 2 ? b : a).withLock(k, () => probe.criticalSection(), { wait: 15_000 });
          })(),
        ),
      );
      report(
        `8 waiters x 10 sections with 1 of 5 masters frozen: ${(80 / ((performance.now() - started) / 1000)).toFixed(0)} sections/s`,
      );
      expect(probe.maxConcurrent).toBe(1);
      expect(probe.counter).toBe(80);
    } finally {
      masters.servers[4].resume();
    }
  });

  it('a frozen minority does not slow the majority: acquire, renew and release decide without the stopped master', async () => {
    const e = await engine();
    masters.servers[4].pause();
    try {
      const started = performance.now();
      const h = await e.acquire(key('frozen'), { wait: 0 });
      const acquireMs = performance.now() - started;
      await h.extend();
      const released = performance.now();
      await h.release();
      report(
        `with 1 of 5 masters frozen: acquire ${acquireMs.toFixed(1)} ms, release ${(performance.now() - released).toFixed(1)} ms`,
      );
      expect(h.held).toBe(false);
    } finally {
      masters.servers[4].resume();
    }
  });
});
