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
