import type { LockEngine } from '../../lib/core/lock-engine';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error';
import { eventually } from '../support/eventually';
import { redlockFile } from './redlock.servers';

/**
 * Shared mode on Redlock: a writer waiting in one process keeps the readers of other processes
 * that come after it out (its mark on the masters), so a stream of overlapping readers cannot
 * starve it. Each engine has its own backend and clients: to the masters, a separate process.
 */
const file = redlockFile(3, 'wp:', { ttl: 10_000, wait: 30_000 });
const engine = file.engine;
const servers = () => file.masters().servers;

/** Live writer marks of `key` on every master. */
const marked = (key: string) =>
  servers().every((s) => Number(s.cli('ZCARD', `{wp:${key}}:ww`)) === 1);

describe('redlock: a waiting writer is not starved by readers of other processes', () => {
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
});
