import { LockEngine, MemoryLockBackend, type Leadership } from '../../lib';
import { eventually } from '../support/eventually';

/** Leadership over the lock machinery (in-process engines sharing one memory backend). */
describe('leader election (memory)', () => {
  const backend = new MemoryLockBackend();
  const engines = [0, 1, 2].map(
    () => new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 300 } }),
  );
  afterAll(() => Promise.all(engines.map((e) => e.close())));

  const leaders = (ls: Leadership[]) => ls.filter((l) => l.isLeader);

  it('exactly one of three campaigners leads; resign hands over; each term has a larger fencing token', async () => {
    const ls = engines.map((e) => e.leadership('workers'));
    const first = await Promise.race(ls.map((l) => l.whenLeader().then(() => l)));
    expect(leaders(ls)).toEqual([first]);
    const token1 = first.term?.fencingToken ?? 0n;
    await first.resign();
    expect(first.isLeader).toBe(false);
    const rest = ls.filter((l) => l !== first);
    const second = await Promise.race(rest.map((l) => l.whenLeader().then(() => l)));
    expect(leaders(ls)).toEqual([second]);
    expect(second.term?.fencingToken).toBeGreaterThan(token1);
    // One campaign per name and engine (while it campaigns; after resign() a new one starts).
    const i = ls.indexOf(second);
    expect(engines[i].leadership('workers')).toBe(second);
  });

  it('a leader whose lock is taken away learns it at once (onChange(false), term signal) and campaigns again', async () => {
    const ls = engines.map((e) => e.leadership('consumer'));
    const leader = await Promise.race(ls.map((l) => l.whenLeader().then(() => l)));
    const term = leader.term;
    const lost = new Promise<boolean>((resolve) =>
      leader.onChange((isLeader) => !isLeader && resolve(true)),
    );
    backend.forceDelete('election:consumer');
    // The holder finds out at its next renewal (ttl/3): its term's signal aborts with LockLostError.
    await expect(lost).resolves.toBe(true);
    expect(term?.signal.aborted).toBe(true);
    await eventually(() => leaders(ls).length === 1, 5_000);
    expect(leaders(ls)).toHaveLength(1);
  });

  it('campaigns end with the engine: close() resigns', async () => {
    const e = new LockEngine({ backend, keyPrefix: '' });
    const l = e.leadership('solo');
    await l.whenLeader();
    await e.close();
    expect(l.isLeader).toBe(false);
    expect(() => e.leadership('other')).toThrow(/shut down/);
  });
});
