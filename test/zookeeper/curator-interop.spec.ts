import { eventually } from '../support/eventually';
import { compileCuratorTool, CuratorTool } from './curator-tool';
import { zooKeeperFixture } from './zookeeper-fixture';

/**
 * Interop with Apache Curator (Debian's libcurator-recipes-java 5.4), both directions: a small
 * Java program (compiled here with javac) holds InterProcessMutex / InterProcessReadWriteLock locks
 * on the same paths our backend uses. Keys made of [A-Za-z0-9_:.-] map to identical node names,
 * so `lock:order:42` is `/locks/lock:order:42` for both.
 */
jest.setTimeout(90_000);

let curator: CuratorTool;
const fx = zooKeeperFixture({
  compile: compileCuratorTool,
  start: async (cs, classes) => (curator = await CuratorTool.start(classes, cs)),
});
const { children, fresh } = fx;
const engine = (curatorRecipe: 'mutex' | 'read-write') => fx.engine({ curatorRecipe });

describe('Curator interop (InterProcessMutex)', () => {
  it('uses the same path and node names as Curator: /locks/<key>/_c_<uuid>-lock-<10 digits>', async () => {
    const ours = engine('mutex');
    const { key, path } = fresh('names');
    expect(path).toBe(`/locks/lock:${key}`);
    await curator.lock('n1', 'mutex', path);
    expect(await curator.acquire('n1', 5_000)).toBe(true);
    const waiting = ours.acquire(key);
    await eventually(async () => (await children(path)).length === 2);
    for (const child of await children(path))
      expect(child).toMatch(
        /^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$/,
      );
    await curator.release('n1');
    const h = await waiting;
    await h.release();
    expect(await children(path)).toEqual([]);
  });

  it('a Curator writer excludes ours and ours excludes Curator, both directions, with hand-off on release', async () => {
    const ours = engine('mutex');
    const { key, path } = fresh('mutex');
    await curator.lock('m1', 'mutex', path);
    await curator.lock('m2', 'mutex', path);

    expect(await curator.acquire('m1', 5_000)).toBe(true);
    expect(await ours.tryAcquire(key)).toBeNull();
    let granted = false;
    const waiting = ours.acquire(key).then((h) => ((granted = true), h));
    await eventually(async () => (await children(path)).length === 2); // we are queued behind Curator
    expect(granted).toBe(false);
    await curator.release('m1');
    const h = await waiting;
    expect(h.held).toBe(true);

    expect(await curator.acquire('m2', 300)).toBe(false); // Curator gives up while we hold it
    const curatorWaits = curator.acquire('m2', 10_000);
    await eventually(async () => (await children(path)).length === 2);
    await h.release();
    expect(await curatorWaits).toBe(true);
    expect(await ours.tryAcquire(key)).toBeNull();
    await curator.release('m2');
    const again = await ours.acquire(key, { wait: 5_000 });
    await again.release();
  });

  it('mutual exclusion under contention: a Curator writer and ours never are inside at once', async () => {
    const ours = engine('mutex');
    const { key, path } = fresh('hammer');
    const probe = `/probe-${key}`;
    const createProbe = () =>
      new Promise<boolean>((resolve, reject) =>
        fx.admin.create(probe, null, 1 /* EPHEMERAL */, (e) =>
          !e
            ? resolve(true)
            : e.getCode?.() === -110 /* NODE_EXISTS */
              ? resolve(false)
              : reject(e),
        ),
      );
    const deleteProbe = () =>
      new Promise<void>((resolve, reject) =>
        fx.admin.remove(probe, -1, (e) => (e ? reject(e) : resolve())),
      );
    await curator.lock('h1', 'mutex', path);
    const rounds = 40;
    let ourOverlaps = 0;
    let javaQueued = 0; // rounds in which the Java side was waiting behind us: the two really contended
    const java = curator.hammer('h1', rounds, probe);
    for (let i = 0; i < rounds; i++) {
      await ours.withLock(key, async () => {
        const mine = await createProbe(); // NODE_EXISTS: the Java side is inside as well
        if (!mine) ourOverlaps++;
        if ((await children(path)).length > 1) javaQueued++;
        if (mine) await deleteProbe();
      });
    }
    expect(await java).toBe(0);
    expect(ourOverlaps).toBe(0);
    expect(javaQueued).toBeGreaterThan(0);
    expect(await children(path)).toEqual([]);
  });
});

describe('Curator interop (InterProcessReadWriteLock)', () => {
  it('Curator readers and our readers hold at once; a writer on either side waits for all of them', async () => {
    const ours = engine('read-write');
    const { key, path } = fresh('readers');
    await curator.lock('r1', 'read', path);
    await curator.lock('r2', 'read', path);
    await curator.lock('w1', 'write', path);

    expect(await curator.acquire('r1', 5_000)).toBe(true);
    const mine = await ours.acquire(key, { mode: 'shared', wait: 0 });
    expect(await curator.acquire('r2', 0)).toBe(true);
    expect(await curator.acquire('w1', 300)).toBe(false);
    expect(await ours.tryAcquire(key)).toBeNull();
    expect((await children(path)).filter((c) => c.includes('-__READ__')).length).toBe(3);

    await curator.release('r1');
    await curator.release('r2');
    const curatorWriter = curator.acquire('w1', 10_000);
    await eventually(async () => (await children(path)).some((c) => c.includes('-__WRIT__')));
    await mine.release();
    expect(await curatorWriter).toBe(true);
    await curator.release('w1');
  });

  it('a Curator writer excludes our readers and writers; our writer excludes Curator readers and writers', async () => {
    const ours = engine('read-write');
    const { key, path } = fresh('writers');
    await curator.lock('w2', 'write', path);
    await curator.lock('r3', 'read', path);
    await curator.lock('w3', 'write', path);

    expect(await curator.acquire('w2', 5_000)).toBe(true);
    expect(await ours.tryAcquire(key, { mode: 'shared' })).toBeNull();
    expect(await ours.tryAcquire(key)).toBeNull();
    const reader = ours.acquire(key, { mode: 'shared' });
    await eventually(async () => (await children(path)).length === 2);
    await curator.release('w2');
    await (await reader).release();

    const writer = await ours.acquire(key);
    expect(await curator.acquire('r3', 300)).toBe(false);
    expect(await curator.acquire('w3', 300)).toBe(false);
    const curatorReader = curator.acquire('r3', 10_000);
    await eventually(async () => (await children(path)).length === 2);
    await writer.release();
    expect(await curatorReader).toBe(true);
    await curator.release('r3');
  });

  it('a queued writer is not overtaken by later readers, across Curator and us', async () => {
    const ours = engine('read-write');
    const { key, path } = fresh('queue');
    await curator.lock('w4', 'write', path);
    await curator.lock('r4', 'read', path);

    expect(await curator.acquire('w4', 5_000)).toBe(true);
    const writer = ours.acquire(key);
    await eventually(async () => (await children(path)).length === 2);
    const curatorReader = curator.acquire('r4', 10_000);
    await eventually(async () => (await children(path)).length === 3);
    await curator.release('w4');
    const h = await writer; // our writer, queued before the reader, goes first
    let readerDone = false;
    void curatorReader.then(() => (readerDone = true));
    expect(await curator.acquire('w4', 200)).toBe(false); // the round trip proves Curator's reader is still waiting
    expect(readerDone).toBe(false);
    await h.release();
    expect(await curatorReader).toBe(true);
    await curator.release('r4');
  });
});
