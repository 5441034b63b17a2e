import { leaseHolds } from './zookeeper.semaphore-nodes';

/** The grant rule of a semaphore lease (Curator's InterProcessSemaphoreV2 layout). */
describe('leaseHolds', () => {
  const lease = (seq: number, id = 'a') =>
    `_c_${id.padEnd(36, '0')}-lease-${String(seq).padStart(10, '0')}`;

  it('counts only leases as old as ours: younger ones (tries about to give up) do not block it', () => {
    const all = [5, 6, 7, 8, 9, 10].map((s, i) => lease(s, String(i)));
    // Six tries listed at once with 2 permits: counting every lease, none would hold.
    expect(all.map((ours) => leaseHolds(all, ours, 2))).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
  });

  it('holds when at most N leases are as old as ours, in any listing order', () => {
    const held = [lease(3, 'x'), lease(1, 'y')];
    expect(leaseHolds([...held, lease(4)], lease(4), 2)).toBe(false);
    expect(leaseHolds([lease(4), ...held], lease(4), 3)).toBe(true);
    expect(leaseHolds([lease(2), ...held], lease(2), 2)).toBe(true);
  });

  it('counts a child without a sequence as older', () => {
    expect(leaseHolds(['stray', lease(7)], lease(7), 1)).toBe(false);
    expect(leaseHolds(['stray', lease(7)], lease(7), 2)).toBe(true);
  });
});
