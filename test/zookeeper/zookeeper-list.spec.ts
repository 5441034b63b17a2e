import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { lockDirectory } from '../../lib/backends/zookeeper/zookeeper.nodes';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { newZkClient } from '../support/zookeeper-server';
import { zooKeeperFixture } from './zookeeper-fixture';

/**
 * list(prefix, limit) on ZooKeeper (issue 15): one getChildren of basePath (every key is one
 * encoded child of it), the prefix matched on decoded names, held = a sequential child (ours,
 * Curator's, kazoo's) or a lease under `leases` (Curator's semaphore layout). Against a private
 * ZooKeeper with its own basePath per test.
 */
const fx = zooKeeperFixture();
let n = 0;

function setup(basePath = `/list-${++n}`) {
  return { ...fx.open({ basePath }, { ttl: 10_000, wait: 5_000 }), basePath };
}

const create = (path: string, mode: number) =>
  new Promise<string>((resolve, reject) =>
    fx.admin.create(path, null, mode, (e, p) => (e ? reject(e) : resolve(p))),
  );
const PERSISTENT = 0;
const EPHEMERAL_SEQUENTIAL = 3;

describe('ZooKeeper list()', () => {
  it('lists the held keys under a prefix, in key order, up to limit; released keys drop out', async () => {
    const { backend, engine } = setup();
    const keys = ['jobs/b', 'jobs/a', 'jobs/ä ü', 'other/x', 'jobs'];
    const handles = await Promise.all(keys.map((k) => engine.acquire(k)));
    const shared = await engine.acquire('jobs/shared', { mode: 'shared' });
    expect(await backend.list('lock:jobs/', 100)).toEqual([
      'lock:jobs/a',
      'lock:jobs/b',
      'lock:jobs/shared',
      'lock:jobs/ä ü',
    ]);
    expect(await backend.list('lock:jobs/', 2)).toEqual(['lock:jobs/a', 'lock:jobs/b']);
    expect(await backend.list('lock:jobs', 100)).toHaveLength(5);
    expect(await backend.list('', 100)).toHaveLength(6);
    expect(await backend.list('lock:none', 100)).toEqual([]);
    await handles[1].release(); // jobs/a
    await shared.release();
    expect(await backend.list('lock:jobs/', 100)).toEqual(['lock:jobs/b', 'lock:jobs/ä ü']);
    // Through the operator API: keys without the keyPrefix.
    expect(await engine.operator.list('jobs/')).toEqual(['jobs/b', 'jobs/ä ü']);
    await Promise.all(handles.filter((_, i) => i !== 1).map((h) => h.release()));
    expect(await backend.list('', 100)).toEqual([]);
  });

  it("counts other tools' contenders, skips empty and foreign directories", async () => {
    const { backend, basePath } = setup();
    const held = lockDirectory(basePath, 'lock:kazoo-held');
    await create(basePath, PERSISTENT);
    await create(held, PERSISTENT);
    await create(`${held}/0123456789abcdef0123456789abcdef__lock__`, EPHEMERAL_SEQUENTIAL);
    await create(lockDirectory(basePath, 'lock:empty'), PERSISTENT); // left behind, nobody in it
    await create(`${basePath}/lock:bad%zz`, PERSISTENT); // not our encoding: skipped
    await create(`${basePath}/lock:bad%zz/_c_x-lock-`, EPHEMERAL_SEQUENTIAL);
    const sem = lockDirectory(basePath, 'lock:sem');
    await create(sem, PERSISTENT);
    await create(`${sem}/leases`, PERSISTENT);
    await create(`${sem}/locks`, PERSISTENT);
    expect(await backend.list('lock:', 100)).toEqual(['lock:kazoo-held']);
    await create(`${sem}/leases/_c_x-lease-`, EPHEMERAL_SEQUENTIAL);
    expect(await backend.list('lock:', 100)).toEqual(['lock:kazoo-held', 'lock:sem']);
  });

  it('answers [] for a basePath nobody created yet, and fails (does not answer []) when ZooKeeper is unreachable', async () => {
    const { backend } = setup('/list-never-used');
    expect(await backend.list('', 10)).toEqual([]);
    const dead = new ZooKeeperLockBackend({
      clientFactory: () => newZkClient('127.0.0.1:1', 1_000),
      basePath: '/locks',
    });
    try {
      await expect(dead.list('', 10)).rejects.toBeInstanceOf(LockBackendUnavailableError);
    } finally {
      await dead.close();
    }
  });
});
