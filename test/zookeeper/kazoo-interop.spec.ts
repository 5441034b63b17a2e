import type { NodeNames } from '../../lib/backends/zookeeper/zookeeper.nodes';
import { eventually } from '../support/eventually';
import { zooKeeperFixture } from './zookeeper-fixture';
import { KazooTool } from './kazoo-tool';

/**
 * Interop with kazoo (Debian's python3-kazoo 2.8), both directions, through a Python process
 * (kazoo_tool.py). Our ordering counts kazoo's `<uuid>__lock__<seq>` nodes as contenders, so kazoo's
 * Lock and Election exclude ours whatever nodeNames says. kazoo only counts nodes matching
 * `(__lock__|<extra_lock_patterns>)<10 digits>$`: with nodeNames 'curator' (default) a kazoo Lock
 * sees ours when built with extra_lock_patterns=['-lock-'] and a kazoo Election (which cannot pass
 * patterns) does not; with nodeNames 'kazoo' both see ours as they are.
 */
jest.setTimeout(90_000);

let kazoo: KazooTool;
const fx = zooKeeperFixture({
  start: async (cs) => (kazoo = await KazooTool.start(cs)),
});
const { children, fresh, freshElection } = fx;
const engine = (nodeNames: NodeNames = 'curator') => fx.engine({ nodeNames });

describe('kazoo Lock interop', () => {
  it("kazoo holds: ours is refused and queues behind kazoo's node; kazoo releases: ours gets it", async () => {
    const ours = engine();
    const { key, path } = fresh('kazoo-first');
    await kazoo.lock('k1', path, 'py-k1');
    expect(await kazoo.acquire('k1', 5)).toBe('acquired');
    expect((await children(path))[0]).toMatch(/^[0-9a-f]{32}__lock__\d{10}$/);
    expect(await ours.tryAcquire(key)).toBeNull();
    let granted = false;
    const waiting = ours.acquire(key).then((h) => ((granted = true), h));
    await eventually(async () => (await children(path)).length === 2);
    expect(granted).toBe(false);
    await kazoo.release('k1');
    const h = await waiting;
    expect(h.held).toBe(true);
    await h.release();
    expect(await children(path)).toEqual([]);
  });

  it("ours holds (Curator names): kazoo's Lock with extra_lock_patterns=['-lock-'] times out, then gets it after our release", async () => {
    const ours = engine();
    const { key, path } = fresh('ours-first');
    const h = await ours.acquire(key);
    await kazoo.lock('k2', path, 'py-k2', ['-lock-']);
    expect(await kazoo.acquire('k2', 0.5)).toBe('timeout');
    const kazooWaits = kazoo.acquire('k2', 20);
    await eventually(async () => (await children(path)).length === 2);
    await h.release();
    expect(await kazooWaits).toBe('acquired');
    expect(await ours.tryAcquire(key)).toBeNull();
    await kazoo.release('k2');
  });

  it("the one-way limit with Curator names: kazoo's default Lock does not see our `-lock-` node", async () => {
    const ours = engine();
    const { key, path } = fresh('one-way');
    const h = await ours.acquire(key);
    await kazoo.lock('k3', path, 'py-k3');
    // kazoo's regex `__lock__\d{10}$` skips `_c_<uuid>-lock-<seq>`: it takes the lock beside ours.
    expect(await kazoo.acquire('k3', 5)).toBe('acquired');
    await kazoo.release('k3');
    await h.release();
  });

  it("nodeNames 'kazoo': ours holds, kazoo's default Lock times out; ours releases, kazoo gets it", async () => {
    const ours = engine('kazoo');
    const { key, path } = fresh('kazoo-names');
    const h = await ours.acquire(key);
    expect((await children(path))[0]).toMatch(/^_c_[0-9a-f-]{36}-__lock__\d{10}$/);
    await kazoo.lock('k4', path, 'py-k4');
    expect(await kazoo.acquire('k4', 0.5)).toBe('timeout');
    const kazooWaits = kazoo.acquire('k4', 20);
    await eventually(async () => (await children(path)).length === 2);
    await h.release();
    expect(await kazooWaits).toBe('acquired');
    expect(await ours.tryAcquire(key)).toBeNull();
    await kazoo.release('k4');
    expect(await ours.tryAcquire(key)).not.toBeNull();
  });
});

describe('kazoo Election interop', () => {
  it("kazoo's Election leads: our campaign waits; kazoo's leader resigns: ours leads", async () => {
    const ours = engine();
    const { election, path } = freshElection('kazoo-leads');
    await kazoo.elect('e1', path, 'py-e1');
    await kazoo.leading('e1');
    const leadership = ours.leadership(election, { proposal: 'ours-e1' });
    await eventually(async () => (await children(path)).length === 2);
    expect(leadership.isLeader).toBe(false);
    await kazoo.resign('e1');
    await leadership.whenLeader();
    await leadership.resign();
  });

  it("nodeNames 'kazoo': our campaign leads, kazoo's Election waits and lists our proposal first; ours resigns: kazoo leads", async () => {
    const ours = engine('kazoo');
    const { election, path } = freshElection('ours-leads');
    const leadership = ours.leadership(election, { proposal: 'ours-e2' });
    await leadership.whenLeader();
    await kazoo.elect('e2', path, 'py-e2');
    await eventually(async () => (await children(path)).length === 2);
    expect(await kazoo.contenders('e2')).toEqual(['ours-e2', 'py-e2']);
    expect(kazoo.saidLeading('e2')).toBe(false);
    expect(leadership.isLeader).toBe(true);
    await leadership.resign();
    await kazoo.leading('e2');
    await kazoo.resign('e2');
  });
});
