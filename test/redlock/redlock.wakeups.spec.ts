import { LockEngine } from '../../lib/core/lock-engine';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from '../conformance/conformance-tools';
import { eventually } from '../support/eventually';
import { RedlockMasters } from './redlock.servers';

/**
 * Redlock wake-ups are O(1) per release: a waiting process registers its own channel per key on
 * each master and a release wakes the earliest registered process, not every waiting process
 * (which made a handoff cost one attempt round per waiting process). Plus inspect/forceRelease.
 */
let masters: RedlockMasters;

beforeAll(async () => {
  masters = await RedlockMasters.start(3);
});

afterAll(async () => masters?.destroy());

/**
 * `waiters` waiters spread over 8 processes (engines over their own clients) queue behind a holder;
 * returns the tryAcquire attempts (each one a round on every master) per handoff after its release.
 */
async function attemptsPerHandoff(key: string, waiters: number): Promise<number> {
  const engines: LockEngine[] = [];
  let attempts = 0;
  for (let p = 0; p < 8; p++) {
    const backend = await masters.backend();
    const original = backend.tryAcquire.bind(backend);
    backend.tryAcquire = (request) => {
      attempts++;
      return original(request);
    };
    engines.push(
      new LockEngine({ backend, keyPrefix: 'wk:', defaults: { ttl: 10_000, wait: 120_000 } }),
    );
  }
  try {
    const holder = await engines[0].acquire(key);
    let inside = 0;
    let overlap = false;
    const done = Array.from({ length: waiters }, (_, i) =>
      engines[i % 8].withLock(key, async () => {
        if (++inside > 1) overlap = true;
        await Promise.resolve();
        inside--;
      }),
    );
    // Every process's head has registered on the masters before the first release.
    await eventually(
      () => masters.servers.every((s) => Number(s.cli('ZCARD', `{wk:${key}}:q`)) === 8),
      20_000,
    );
    const before = attempts;
    await holder.release();
    await Promise.all(done);
    const perHandoff = (attempts - before) / waiters;
    process.stdout.write(
      `[redlock wake-ups] 8 processes, ${waiters} waiters: ${before} attempts before the first release, ${attempts - before} after for ${waiters} handoffs (${perHandoff.toFixed(3)} per handoff)\n`,
    );
    expect(overlap).toBe(false);
    return perHandoff;
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
}

describe('RedlockBackend wake-ups and operator actions', () => {
  it('8 waiting processes, 40 waiters: attempts per handoff stay O(1) (no herd)', async () => {
    const perHandoff = await attemptsPerHandoff('herd', 40);
    // A herd costs about one attempt per waiting process (8) per handoff; one process woken costs ~1 (its head's attempt), plus the engine's 1 s fallback re-attempts of long waits.
    expect(perHandoff).toBeLessThan(4);
  });

  it('100 and 200 waiters over 8 processes: a constant few attempts per handoff (no herd), whatever the number of waiters', async () => {
    const per: number[] = [];
    for (const n of [100, 200]) per.push(await attemptsPerHandoff(`herd${n}`, n));
    process.stdout.write(
      `[redlock wake-ups] attempts per handoff at 100 / 200 waiters: ${per.map((p) => p.toFixed(3)).join(' / ')}\n`,
    );
    // A herd costs at least one attempt per waiting process (8) per handoff, and more as waiters
    // grow; measured here: ~2.8-3.0 at both sizes (the woken process's head, a re-attempt on the
    // same release's message from another master after losing the race, the 1 s fallbacks).
    for (const p of per) expect(p).toBeLessThan(4);
  });

  it('inspect reports the majority holder and the largest token; forceRelease frees it and the holder learns', async () => {
    const ops = await masters.backend();
    const a = new LockEngine({
      backend: await masters.backend(),
      keyPrefix: 'wk:',
      defaults: { ttl: 600 },
    });
    expect(await ops.inspect('wk:free')).toMatchObject({ held: false, holders: [] });
    const held = await a.acquire('op');
    const seen = await ops.inspect('wk:op');
    expect(seen).toMatchObject({ key: 'wk:op', held: true, mode: 'exclusive' });
    // The largest token on any master; the grant took the largest of the majority that answered first.
    expect((seen.fencingToken as bigint) >= held.fencingToken).toBe(true);
    expect(seen.holders).toHaveLength(1);
    expect(seen.holders[0].remainingTtl).toBeLessThanOrEqual(600);
    expect(await ops.forceRelease('wk:op')).toBe(true);
    expect(await untilAborted(held.signal, 5_000)).toBeInstanceOf(LockLostError);
    expect((await ops.inspect('wk:op')).held).toBe(false);
    expect(await ops.forceRelease('wk:op')).toBe(false);
    await a.close();
    await ops.close();
  });
});
