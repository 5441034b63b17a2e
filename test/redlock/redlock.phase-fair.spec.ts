import type { LockEngine } from '../../lib/core/lock-engine';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { eventually } from '../support/eventually';
import { redlockFile } from './redlock.servers';

/**
 * Shared mode on Redlock is phase-fair: a writer waiting in one process keeps the readers of other
 * processes that come after it out (its mark on the masters), so a stream of overlapping readers
 * cannot starve it; and a writer's release lets the readers that waited in before the next writer
 * (their read phase), so a stream of writers cannot starve a reader. Each engine has its own
 * backend and clients: to the masters, a separate process.
 */
const file = redlockFile(3, 'wp:', { ttl: 10_000, wait: 30_000 });
const engine = file.engine;
const servers = () => file.masters().servers;

/** Live writer marks of `key` on every master. */
const marked = (key: string) =>
  servers().every((s) => Number(s.cli('ZCARD', `{wp:${key}}:ww`)) === 1);

/** A master's clock in ms (TIME). */
const now = (i: number) => {
  const [s, us] = servers()[i].cli('TIME').split('\n').map(Number);
  return s * 1000 + Math.floor(us / 1000);
};

/**
 * How many masters hold a live mark of `key` in `set` (ww, rw) by an owner other than `not`. A
 * holder may hold on a majority only (a master busy for its grant, e.g. after a split vote), and a
 * waiter is marked only where it is busy: a waiter behind it may be marked on that majority only.
 */
const othersMarkedOn = (key: string, set: 'ww' | 'rw', not = '') =>
  servers().filter((s, i) => {
    const reply = s.cli('ZRANGE', `{wp:${key}}:${set}`, '0', '-1', 'WITHSCORES').split('\n');
    const t = now(i);
    return reply.some(
      (owner, j) => j % 2 === 0 && owner !== '' && owner !== not && Number(reply[j + 1]) > t,
    );
  }).length;

/** Whether every master holds such a mark. */
const othersMarked = (key: string, set: 'ww' | 'rw') =>
  othersMarkedOn(key, set) === servers().length;

describe('redlock: phase-fair reader-writer waiting across processes', () => {
  it('later readers wait behind it; it is granted when the readers before it leave, then they are', async () => {
    const [reader1, writer, reader2] = [await engine(), await engine(), await engine()];
    const read = await reader1.acquire('k1', { mode: 'shared' });
    const order: string[] = [];
    const writing = writer.acquire('k1').then((h) => (order.push('writer'), h));
    await eventually(() => marked('k1'));
    // Free for a reader by the holders alone; the writer waits.
    expect(await reader2.tryAcquire('k1', { mode: 'shared' })).toBeNull();
    const reading = reader2
      .acquire('k1', { mode: 'shared' })
      .then((h) => (order.push('reader'), h));
    await read.release();
    const written = await writing;
    expect(order).toEqual(['writer']);
    await written.release();
    const second = await reading;
    expect(order).toEqual(['writer', 'reader']);
    expect(servers().every((s) => Number(s.cli('EXISTS', '{wp:k1}:ww')) === 0)).toBe(true);
    await second.release();
  });

  it('a stream of overlapping readers of two processes lets the writer in', async () => {
    const [a, b, writer] = [await engine(), await engine(), await engine()];
    let settled = false;
    // Two processes keep the key read without a gap: each takes its next turn before its last
    // ends, and steps back once that finds the key busy (a writer waits).
    const reading = new Set<LockEngine>();
    const stream = async (e: LockEngine) => {
      let held = await e.acquire('k2', { mode: 'shared' });
      reading.add(e);
      for (;;) {
        const next = settled ? null : await e.tryAcquire('k2', { mode: 'shared' });
        await held.release();
        if (!next) return;
        held = next;
      }
    };
    const streams = [stream(a), stream(b)];
    await eventually(() => reading.size === 2); // both read before the writer comes
    const written = await writer.acquire('k2', { wait: 20_000 }).finally(() => (settled = true));
    await written.release();
    await Promise.all(streams);
  });

  it('a writer that gives up takes its marks back before they lapse, and readers join', async () => {
    const [reader1, writer, reader2] = [await engine(), await engine(), await engine()];
    const read = await reader1.acquire('k3', { mode: 'shared' });
    const giving = writer.acquire('k3', { wait: 300 });
    await eventually(() => marked('k3'));
    // When each master's mark would lapse, by that master's clock (ms).
    const field = (reply: string, i: number) => Number(reply.split('\n')[i]);
    const lapses = servers().map((s) =>
      field(s.cli('ZRANGE', '{wp:k3}:ww', '0', '0', 'WITHSCORES'), 1),
    );
    await expect(giving).rejects.toThrow(LockAcquireTimeoutError);
    await eventually(() => servers().every((s) => Number(s.cli('EXISTS', '{wp:k3}:ww')) === 0));
    servers().forEach((s, i) => {
      const time = s.cli('TIME');
      const now = field(time, 0) * 1000 + Math.floor(field(time, 1) / 1000);
      expect(now).toBeLessThan(lapses[i]); // taken back, not lapsed
    });
    const joined = await reader2.tryAcquire('k3', { mode: 'shared' });
    expect(joined).not.toBeNull();
    await Promise.all([read.release(), joined!.release()]);
  });

  it("a writer's release lets a waiting reader in before the writer that waits", async () => {
    const [writer1, writer2, reader] = [await engine(), await engine(), await engine()];
    const held = await writer1.acquire('k4');
    const order: string[] = [];
    const writing = writer2.acquire('k4').then((h) => (order.push('writer'), h));
    await eventually(() => othersMarked('k4', 'ww'));
    const reading = reader.acquire('k4', { mode: 'shared' }).then((h) => (order.push('reader'), h));
    await eventually(() => othersMarked('k4', 'rw'));
    await held.release();
    const read = await reading;
    expect(order).toEqual(['reader']);
    await read.release();
    await (await writing).release();
    expect(order).toEqual(['reader', 'writer']);
  });

  it('a stream of writers of two processes lets a waiting reader in', async () => {
    const [a, b, reader] = [await engine(), await engine(), await engine()];
    let settled = false;
    // Two processes keep the key written without a gap: each holds until the other waits.
    const writing = new Set<LockEngine>();
    const stream = async (e: LockEngine) => {
      for (;;) {
        const held = await e.acquire('k5', { wait: 20_000 });
        writing.add(e);
        await eventually(() => settled || othersMarkedOn('k5', 'ww', held.owner) >= 2, 30_000);
        await held.release();
        if (settled) return;
      }
    };
    const streams = [stream(a), stream(b)];
    await eventually(() => writing.size === 2); // both wrote before the reader comes
    const read = await reader
      .acquire('k5', { mode: 'shared', wait: 20_000 })
      .finally(() => (settled = true));
    await read.release();
    await Promise.all(streams);
  });

  it('a reader that gives up takes its marks back before they lapse', async () => {
    const [writer, reader] = [await engine(), await engine()];
    const held = await writer.acquire('k6');
    const giving = reader.acquire('k6', { mode: 'shared', wait: 300 });
    await eventually(() => othersMarked('k6', 'rw'));
    const field = (reply: string, i: number) => Number(reply.split('\n')[i]);
    const lapses = servers().map((s) =>
      field(s.cli('ZRANGE', '{wp:k6}:rw', '0', '0', 'WITHSCORES'), 1),
    );
    await expect(giving).rejects.toThrow(LockAcquireTimeoutError);
    await eventually(() => servers().every((s) => Number(s.cli('EXISTS', '{wp:k6}:rw')) === 0));
    servers().forEach((_, i) => expect(now(i)).toBeLessThan(lapses[i])); // taken back, not lapsed
    await held.release();
    // No read phase opened for it: the key is free for a writer at once.
    expect(servers().every((s) => Number(s.cli('EXISTS', '{wp:k6}:rp')) === 0)).toBe(true);
  });

  it('a release takes back the mark a master that was busy for the grant kept', async () => {
    // Master 0 alone is held by somebody else: the writer is granted by the other two, and is
    // marked on master 0 by its busy answer there.
    servers()[0].cli('SET', '{wp:k7}', 'somebody', 'PX', '30000');
    const [writer] = [await engine()];
    const before = now(0);
    const held = await writer.acquire('k7', { wait: 5_000 });
    expect(Number(servers()[0].cli('ZCARD', '{wp:k7}:ww'))).toBe(1);
    await held.release();
    expect(Number(servers()[0].cli('EXISTS', '{wp:k7}:ww'))).toBe(0);
    expect(now(0)).toBeLessThan(before + 2_000); // taken back, not lapsed (a mark lives 2 s)
    servers()[0].cli('DEL', '{wp:k7}');
  });
});
