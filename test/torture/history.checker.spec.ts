import { FencedStore } from './fenced-store.server';
import { checkHistories, type CheckInput } from './history.checker';
import type { HistoryEvent } from './history.types';

/**
 * The checker must catch what it claims to catch: each case builds a small history through the
 * real FencedStore, breaks one property, and expects exactly that finding (and a clean run clean).
 */
const TTL = 100;
const WAIT = 200;

class Run {
  t = 1_000;
  readonly store = new FencedStore(() => this.tick());
  readonly histories = new Map<number, HistoryEvent[]>();

  tick(ms = 1): number {
    return (this.t += ms);
  }

  events(slot: number): HistoryEvent[] {
    if (!this.histories.has(slot))
      this.histories.set(slot, [
        { ev: 'ready', t: 0, slot, inc: 1, role: 'writer', via: 'withLock', pid: slot },
      ]);
    return this.histories.get(slot) as HistoryEvent[];
  }

  grant(
    slot: number,
    n: number,
    token: number,
    mode: 'exclusive' | 'shared' = 'exclusive',
  ): string {
    const op = `${slot}.1.${n}`;
    this.events(slot).push(
      { ev: 'invoke', t: this.tick(), op, mode },
      { ev: 'ok', t: this.tick(), op, token: String(token), mode },
    );
    return op;
  }

  read(op: string, token: number): { value: number; shadow: number } {
    const a = this.store.handle({ op: 'read', token: String(token), attempt: op });
    this.events(Number(op.split('.')[0])).push({
      ev: 'read',
      t: this.tick(),
      op,
      accepted: a.accepted as boolean,
      value: a.value as number,
    });
    return { value: a.value as number, shadow: a.shadow as number };
  }

  write(op: string, token: number, read: { value: number; shadow: number }): void {
    const slot = Number(op.split('.')[0]);
    this.events(slot).push({ ev: 'write-invoke', t: this.tick(), op, value: read.value + 1 });
    const a = this.store.handle({
      op: 'write',
      token: String(token),
      attempt: op,
      value: read.value + 1,
      shadow: read.shadow + 1,
    });
    this.events(slot).push(
      { ev: 'write', t: this.tick(), op, accepted: a.accepted as boolean },
      { ev: 'release', t: this.tick(), op },
    );
  }

  section(slot: number, n: number, token: number): void {
    const op = this.grant(slot, n, token);
    this.write(op, token, this.read(op, token));
  }

  check(extra: Partial<CheckInput> = {}) {
    return checkHistories({
      histories: [...this.histories.values()],
      records: this.store.records,
      value: this.store.value,
      shadow: this.store.shadow,
      healAt: 1_000,
      ttl: TTL,
      wait: WAIT,
      slots: this.histories.size,
      fencing: 'strict',
      ...extra,
    });
  }
}

describe('torture checker', () => {
  it('passes a clean serial history', () => {
    const run = new Run();
    for (let i = 1; i <= 4; i++) run.section(i % 2, i, i);
    const r = run.check();
    expect(r).toMatchObject({
      safe: true,
      live: true,
      lostUpdates: 0,
      overlaps: 0,
      tokensBackwards: 0,
      writesAfterLost: 0,
      finalValue: 4,
    });
    expect(r.ops.writesAccepted).toBe(4);
    expect(r.unfenced.lostUpdates).toBe(0);
  });

  it('fencing refuses a paused holder, and the shadow counter shows the update an unfenced store loses', () => {
    const run = new Run();
    const stale = run.grant(0, 1, 1);
    const staleRead = run.read(stale, 1);
    run.section(1, 1, 2); // the lock expired while holder 0 was paused; holder 1 got token 2
    run.write(stale, 1, staleRead); // holder 0 resumes and writes with its old token
    const r = run.check();
    expect(r.safe).toBe(true);
    expect(r.ops.writesRejected).toBe(1);
    expect(r.finalValue).toBe(1);
    expect(r.unfenced).toMatchObject({
      writeAttempts: 2,
      finalValue: 1,
      lostUpdates: 1,
      overlappingSections: 1,
      staleWritesStoppedBySignal: 0,
    });
  });

  it('counts a skipped write as a stale write stopped by the signal when another holder wrote meanwhile', () => {
    const run = new Run();
    const stale = run.grant(0, 1, 1);
    run.read(stale, 1);
    run.section(1, 1, 2);
    run
      .events(0)
      .push(
        { ev: 'lost', t: run.tick(), op: stale, reason: 'test' },
        { ev: 'skip-write', t: run.tick(), op: stale },
      );
    const r = run.check();
    expect(r.safe).toBe(true);
    expect(r.unfenced.staleWritesStoppedBySignal).toBe(1);
  });

  it('reports a lost update and an overlap when two holders share a token (a broken backend)', () => {
    const run = new Run();
    const a = run.grant(0, 1, 5);
    const b = run.grant(1, 1, 5);
    const ra = run.read(a, 5);
    const rb = run.read(b, 5);
    run.write(a, 5, ra);
    run.write(b, 5, rb);
    const r = run.check();
    expect(r.safe).toBe(false);
    expect(r.lostUpdates).toBeGreaterThan(0);
    expect(r.overlaps).toBeGreaterThan(0);
    expect(r.findings.join('\n')).toMatch(/lost update: op 1\.1\.1 \(token 5\) wrote 1 over 1/);
  });

  it('reports a token that went backwards in real time (strict only)', () => {
    const run = new Run();
    run.section(0, 1, 7);
    run.section(1, 1, 3); // invoked after token 7 was granted, yet smaller
    expect(run.check().tokensBackwards).toBe(1);
    expect(run.check().safe).toBe(false);
    expect(run.check({ fencing: 'best-effort' }).safe).toBe(true);
  });

  it("reports a write attempted after the writer's own signal aborted", () => {
    const run = new Run();
    const op = run.grant(0, 1, 1);
    const read = run.read(op, 1);
    run.events(0).push({ ev: 'lost', t: run.tick(), op, reason: 'test' });
    run.write(op, 1, read);
    const r = run.check();
    expect(r.writesAfterLost).toBe(1);
    expect(r.safe).toBe(false);
  });

  it('reports a reader overlapping a writer', () => {
    const run = new Run();
    const reader = run.grant(1, 1, 2, 'shared');
    run.store.handle({ op: 'rbegin', token: '2', attempt: reader });
    run.section(0, 1, 3); // a writer inside the reader's section, with a larger token: accepted
    run.store.handle({ op: 'rend', token: '2', attempt: reader }); // refused: the writer's token is higher
    expect(run.check().readerWriterOverlaps).toBe(0);
    // A broken backend that gives the reader and the writer the same token gets past the fence: overlap.
    const loose = new Run();
    const r2 = loose.grant(1, 1, 3, 'shared');
    loose.store.handle({ op: 'rbegin', token: '3', attempt: r2 });
    loose.section(0, 1, 3);
    loose.store.handle({ op: 'rend', token: '3', attempt: r2 });
    const r = loose.check();
    expect(r.readerWriterOverlaps).toBeGreaterThan(0);
    expect(r.safe).toBe(false);
  });

  it('reports workers that made no progress within 2 x ttl + wait after the heal', () => {
    const run = new Run();
    run.section(0, 1, 1);
    run.events(1); // worker 1 is ready but never granted
    const r = run.check({ healAt: 900 });
    expect(r.stuckWorkers).toEqual([1]);
    expect(r.live).toBe(false);
    expect(r.safe).toBe(true);
  });
});

/** Rules of this round: semaphore permits, multi-key grants per key, tokens per key. */
describe('torture checker: semaphores and multi-key grants', () => {
  /** A semaphore holder: invoke/ok, begin at the store, `valid` (signal intact), end. */
  function permit(run: Run, slot: number, n: number, token: number, permits: number): string {
    const op = `${slot}.1.${n}`;
    const key = `sem${permits}`;
    run.events(slot).push(
      {
        ev: 'invoke',
        t: run.tick(),
        op,
        mode: 'exclusive',
        workload: 'semaphore',
        keys: [key],
        permits,
      },
      {
        ev: 'ok',
        t: run.tick(),
        op,
        token: String(token),
        mode: 'exclusive',
        tokens: { [key]: String(token) },
      },
    );
    run.store.handle({ op: 'sbegin', key, token: String(token), attempt: op });
    return op;
  }

  function endPermit(run: Run, op: string, permits: number, valid = true): void {
    const slot = Number(op.split('.')[0]);
    run.tick(5);
    run
      .events(slot)
      .push(valid ? { ev: 'valid', t: run.tick(), op } : { ev: 'skip-write', t: run.tick(), op });
    run.store.handle({ op: 'send', key: `sem${permits}`, token: '0', attempt: op });
    run.events(slot).push({ ev: 'release', t: run.tick(), op });
  }

  /** A multi-key writer: read every key's counter with its own token, then write every key. */
  function multi(run: Run, slot: number, n: number, tokens: Record<string, number>): void {
    const op = `${slot}.1.${n}`;
    const keys = Object.keys(tokens);
    const tokenText = Object.fromEntries(keys.map((k) => [k, String(tokens[k])]));
    run.events(slot).push(
      { ev: 'invoke', t: run.tick(), op, mode: 'exclusive', workload: 'multi', keys },
      {
        ev: 'ok',
        t: run.tick(),
        op,
        token: tokenText[keys[0]],
        mode: 'exclusive',
        tokens: tokenText,
      },
    );
    const reads = keys.map((key) => {
      const a = run.store.handle({ op: 'read', key, token: tokenText[key], attempt: op });
      return { key, value: a.value as number, shadow: a.shadow as number };
    });
    for (const r of reads) {
      run.events(slot).push({ ev: 'write-invoke', t: run.tick(), op, value: r.value + 1 });
      run.store.handle({
        op: 'write',
        key: r.key,
        token: tokenText[r.key],
        attempt: op,
        value: r.value + 1,
        shadow: r.shadow + 1,
      });
    }
    run.events(slot).push({ ev: 'release', t: run.tick(), op });
  }

  const check = (run: Run) => run.check({ values: run.store.values() });

  it('passes N holders of a semaphore at once, and counts the most', () => {
    const run = new Run();
    const a = permit(run, 0, 1, 1, 2);
    const b = permit(run, 1, 1, 2, 2);
    endPermit(run, a, 2);
    const c = permit(run, 2, 1, 3, 2); // a left before c came: still at most 2
    endPermit(run, b, 2);
    endPermit(run, c, 2);
    const r = check(run);
    expect(r).toMatchObject({ safe: true, semaphoreOverflows: 0, maxHolders: { sem2: 2 } });
    expect(r.ops.semaphoreSections).toBe(3);
    expect(r.ops.grantedBy).toEqual({ plain: 0, semaphore: 3, multi: 0 });
  });

  it('reports N + 1 holders of a semaphore inside their validity at one instant', () => {
    const run = new Run();
    const ops = [permit(run, 0, 1, 1, 2), permit(run, 1, 1, 2, 2), permit(run, 2, 1, 3, 2)];
    for (const op of ops) endPermit(run, op, 2);
    const r = check(run);
    expect(r.semaphoreOverflows).toBe(1);
    expect(r.safe).toBe(false);
    expect(r.findings.join('\n')).toMatch(/semaphore overflow: sem2: op 2\.1\.1 \(permits 2\)/);
  });

  it('does not count a holder whose signal had aborted (it held nothing past its validity)', () => {
    const run = new Run();
    const a = permit(run, 0, 1, 1, 2);
    const b = permit(run, 1, 1, 2, 2);
    const c = permit(run, 2, 1, 3, 2);
    endPermit(run, a, 2, false); // a's validity ran out before b and c: no `valid`
    endPermit(run, b, 2);
    endPermit(run, c, 2);
    expect(check(run)).toMatchObject({ safe: true, semaphoreOverflows: 0 });
  });

  it('checks a multi-key grant on each key against every other grant of that key', () => {
    const clean = new Run();
    multi(clean, 0, 1, { counter: 1, k1: 1 });
    clean.section(1, 1, 2); // the plain lock on counter, after the multi-key grant
    multi(clean, 0, 2, { k1: 2, k2: 1 });
    expect(check(clean)).toMatchObject({
      safe: true,
      lostUpdates: 0,
      overlaps: 0,
      finalValues: { counter: 2, k1: 2, k2: 1 },
    });

    // A broken backend gives a plain holder of k1's... no: gives k1 to two multi-key grants at once.
    const run = new Run();
    const a = '0.1.1';
    const b = '1.1.1';
    for (const [slot, op, t] of [
      [0, a, 1],
      [1, b, 1],
    ] as const) {
      run.events(slot).push(
        {
          ev: 'invoke',
          t: run.tick(),
          op,
          mode: 'exclusive',
          workload: 'multi',
          keys: ['k1', `x${slot}`],
        },
        {
          ev: 'ok',
          t: run.tick(),
          op,
          token: String(t),
          mode: 'exclusive',
          tokens: { k1: String(t), [`x${slot}`]: '1' },
        },
      );
    }
    const ra = run.store.handle({ op: 'read', key: 'k1', token: '1', attempt: a });
    const rb = run.store.handle({ op: 'read', key: 'k1', token: '1', attempt: b });
    run.store.handle({
      op: 'write',
      key: 'k1',
      token: '1',
      attempt: a,
      value: (ra.value as number) + 1,
      shadow: 1,
    });
    run.store.handle({
      op: 'write',
      key: 'k1',
      token: '1',
      attempt: b,
      value: (rb.value as number) + 1,
      shadow: 2,
    });
    const r = check(run);
    expect(r.overlaps).toBeGreaterThan(0);
    expect(r.lostUpdates).toBeGreaterThan(0);
    expect(r.safe).toBe(false);
    expect(r.findings.join('\n')).toMatch(/overlap: k1: writer 0\.1\.1/);
  });

  it('orders tokens per key: a later grant of k1 with a smaller k1 token is a violation, other keys are not compared', () => {
    const run = new Run();
    multi(run, 0, 1, { k1: 7, k2: 1 });
    multi(run, 1, 1, { k2: 2, k3: 1 }); // k3's token 1 is below k1's 7: different keys, fine
    expect(check(run)).toMatchObject({ safe: true, tokensBackwards: 0 });
    multi(run, 2, 1, { k1: 3 }); // invoked after k1 was granted 7: backwards on k1
    const r = check(run);
    expect(r.tokensBackwards).toBe(1);
    expect(r.findings.join('\n')).toMatch(/token backwards: k1: op 2\.1\.1 got 3 after op 0\.1\.1/);
  });
});
