import { eventually } from '../support/eventually';
import { mysqlWaiters } from './mysql-waiters.fixture';

/**
 * Issue 19: across processes, the waiter that has waited longest wins a handoff (waiter tickets),
 * not whichever woken waiter re-attempts first. Each engine below has its own pool, so its own
 * sessions and notify locks: to the server, a separate process. Tolerance: none. Grants follow the
 * order in which the waiters first found the key busy, as long as every waiter re-attempts within
 * its ticket's life (2 s after its last attempt; here each re-attempts at least once a second).
 * Before tickets every release woke all waiters and the first to re-attempt won: a random order
 * (6 waiters: 1 chance in 720 to come out in arrival order).
 */
describe('mysql (MariaDB 10.11): handoffs across processes follow arrival order', () => {
  const WAITERS = 6;
  const { engine, backends, tickets } = mysqlWaiters();

  it('grants the key to waiters of six backends in the order they started waiting', async () => {
    const holder = engine();
    const held = await holder.acquire('fifo:1');
    const waiters = Array.from({ length: WAITERS }, () => engine());
    const granted: number[] = [];
    const done: Promise<void>[] = [];
    for (let i = 0; i < WAITERS; i++) {
      done.push(
        waiters[i].withLock('fifo:1', async () => {
          granted.push(i);
        }),
      );
      // Waiter i has found the key busy and holds its ticket before waiter i + 1 starts.
      await eventually(async () => (await tickets('fifo:1')) === i + 1);
    }
    await held.release();
    await Promise.all(done);
    expect(granted).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("a waiter's ticket is not a holder: inspect and list show the holder alone, forceRelease removes the holder and the waiter is granted", async () => {
    const holder = engine();
    const held = await holder.acquire('fifo:2');
    const ops = backends[backends.length - 1];
    const waiter = engine();
    const waiting = waiter.acquire('fifo:2');
    await eventually(async () => (await tickets('fifo:2')) === 1);
    const seen = await ops.inspect('fifo:2');
    expect(seen.holders.map((h) => h.owner)).toEqual([held.owner]);
    expect(await ops.list('fifo:2', 10)).toEqual(['fifo:2']);
    expect(await ops.forceRelease('fifo:2')).toBe(true);
    expect(await ops.forceRelease('fifo:2')).toBe(false); // a ticket alone is nothing to remove
    const next = await waiting; // still waiting, and granted once the key is free
    expect(next.fencingToken > held.fencingToken).toBe(true);
    await next.release();
  });
});
