import { randomBytes } from 'node:crypto';
import { eventually } from '../support/eventually';
import { compileCuratorLatchTool, CuratorLatchTool } from './curator-latch-tool';
import { zooKeeperFixture } from './zookeeper-fixture';

/**
 * Leader election interop with Apache Curator's LeaderLatch (Debian's libcurator-recipes-java),
 * both directions: a campaign `LockService.campaign(name)` / `engine.leadership(name)` on the
 * default keyPrefix 'lock:' is the LeaderLatch path `/locks/lock:election:<name>`; our participant
 * node is `_c_<uuid>-latch-<seq>` with the proposal as data (Curator's participant id).
 */
jest.setTimeout(90_000);

let curator: CuratorLatchTool;
const fx = zooKeeperFixture({
  compile: compileCuratorLatchTool,
  start: async (cs, classes) => (curator = await CuratorLatchTool.start(classes, cs)),
});
const { backends, children, data, engine } = fx;
const fresh = fx.freshElection;

describe('Curator LeaderLatch interop', () => {
  it('declares the election capability and lays a campaign out as a LeaderLatch participant', async () => {
    const ours = engine();
    expect(backends[backends.length - 1].election).toBeDefined();
    const { election, path } = fresh('layout');
    expect(path).toBe(`/locks/lock:election:${election}`);
    const leadership = ours.leadership(election, { proposal: 'ours-a:1' });
    await leadership.whenLeader();
    const kids = await children(path);
    expect(kids).toHaveLength(1);
    expect(kids[0]).toMatch(
      /^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-\d{10}$/,
    );
    expect(await data(`${path}/${kids[0]}`)).toBe('ours-a:1');
    await leadership.resign();
    expect(await children(path)).toEqual([]);
  });

  it("ours leads: Curator's latch does not, and its getLeader() names our proposal; ours resigns: Curator leads", async () => {
    const ours = engine();
    const { election, path } = fresh('ours-first');
    const leadership = ours.leadership(election, { proposal: 'ours-b:2' });
    await leadership.whenLeader();
    await curator.start('c1', path, 'java-c1');
    await eventually(async () => (await curator.participants('c1')) === 2);
    expect(await curator.leader('c1')).toEqual({ id: 'ours-b:2', isLeader: true });
    expect(await curator.hasLeadership('c1')).toBe(false);
    expect(leadership.isLeader).toBe(true);
    await leadership.resign();
    await curator.isLeader('c1');
    expect(await curator.hasLeadership('c1')).toBe(true);
    expect(await curator.leader('c1')).toEqual({ id: 'java-c1', isLeader: true });
    await curator.close('c1');
  });

  it("Curator's latch leads: ours waits (a try is refused); Curator closes: ours leads", async () => {
    const ours = engine();
    const backend = backends[backends.length - 1];
    const { election, path } = fresh('curator-first');
    await curator.start('c2', path, 'java-c2');
    await curator.isLeader('c2');
    // One deterministic attempt in the campaign layout: refused while Curator's latch leads.
    const attempt = await backend.election!.tryAcquire(
      {
        key: `lock:election:${election}`,
        owner: randomBytes(16).toString('hex'),
        mode: 'exclusive',
        ttl: 5_000,
        signal: new AbortController().signal,
        onLost: () => undefined,
      },
      'ours-probe',
    );
    expect(attempt.acquired).toBe(false);
    expect(await children(path)).toHaveLength(1); // the refused try left no node behind

    const leadership = ours.leadership(election, { proposal: 'ours-c:3' });
    await eventually(async () => (await children(path)).length === 2); // queued behind Curator's node
    expect(await curator.hasLeadership('c2')).toBe(true);
    expect(leadership.isLeader).toBe(false);
    expect(await curator.leader('c2')).toEqual({ id: 'java-c2', isLeader: true });
    await curator.close('c2');
    const term = await leadership.whenLeader();
    expect(term.fencingToken).toBeDefined();
    const kids = await children(path);
    expect(kids).toHaveLength(1);
    expect(await data(`${path}/${kids[0]}`)).toBe('ours-c:3');
    await leadership.resign();
  });

  it('two Curator latches and two campaigns of ours on one path: exactly one leader at a time, in sequence order', async () => {
    const a = engine();
    const b = engine();
    const { election, path } = fresh('mixed');
    const la = a.leadership(election, { proposal: 'ours-d:4' });
    await la.whenLeader();
    await curator.start('c3', path, 'java-c3');
    await eventually(async () => (await children(path)).length === 2);
    const lb = b.leadership(election, { proposal: 'ours-e:5' });
    await eventually(async () => (await children(path)).length === 3);
    await curator.start('c4', path, 'java-c4');
    await eventually(async () => (await children(path)).length === 4);
    // Sequence order: ours-d, java-c3, ours-e, java-c4. Each resign/close hands over to the next.
    expect(await curator.leader('c3')).toEqual({ id: 'ours-d:4', isLeader: true });
    await la.resign();
    await curator.isLeader('c3');
    expect(lb.isLeader).toBe(false);
    expect(await curator.hasLeadership('c4')).toBe(false);
    await curator.close('c3');
    await lb.whenLeader();
    expect(await curator.hasLeadership('c4')).toBe(false);
    expect(await curator.leader('c4')).toEqual({ id: 'ours-e:5', isLeader: true });
    await lb.resign();
    await curator.isLeader('c4');
    await curator.close('c4');
    await eventually(async () => (await children(path)).length === 0);
  });
});
