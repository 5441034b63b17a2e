import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { zooKeeperDigestId } from '../../lib/backends/zookeeper/zookeeper.acl';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { lockDirectory } from '../../lib/backends/zookeeper/zookeeper.nodes';
import { LockEngine } from '../../lib/core/lock-engine';
import { untilAborted } from '../conformance/conformance-tools';
import { connectedZkClient, newZkClient, ZooKeeperServer } from '../support/zookeeper-server';

/**
 * ACLs and digest auth (issue 14.10): with `authInfo` and a digest `acl`, a session without the
 * credentials cannot delete our lock node (ZooKeeper checks DELETE on the lock directory, which
 * the backend created with the ACL), so it cannot break the lock; with the credentials it can.
 * Without the options nodes stay open, as Curator's.
 */
let server: ZooKeeperServer;
let stranger: ZooKeeperClientLike;
const engines: LockEngine[] = [];
const ERR_NO_AUTH = -102;

const SECRET = 'app:s3cret';
const ACL = [
  { scheme: 'digest', id: zooKeeperDigestId('app', 's3cret'), perms: 'cdrwa' },
  { scheme: 'world', id: 'anyone', perms: 'r' },
];

function engine(
  options: Partial<ConstructorParameters<typeof ZooKeeperLockBackend>[0]>,
): LockEngine {
  const backend = new ZooKeeperLockBackend({
    clientFactory: () => newZkClient(server.connectionString, 5_000),
    ...options,
  });
  const e = new LockEngine({ backend, defaults: { ttl: 5_000, wait: 5_000 } });
  engines.push(e);
  return e;
}

const children = (c: ZooKeeperClientLike, path: string) =>
  new Promise<string[]>((resolve, reject) =>
    c.getChildren(path, (e, list) => (e ? reject(e) : resolve(list))),
  );
const remove = (c: ZooKeeperClientLike, path: string) =>
  new Promise<number>((resolve) =>
    c.remove(path, -1, (e) => resolve(e ? (e.getCode?.() ?? -1) : 0)),
  );

beforeAll(async () => {
  server = await ZooKeeperServer.start();
  stranger = await connectedZkClient(server.connectionString);
});

afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  stranger?.close();
  await server?.destroy();
});

it('with a digest ACL, a session without the credentials cannot delete our lock node; the lock stays held', async () => {
  const e = engine({
    basePath: '/guarded',
    acl: ACL,
    authInfo: { scheme: 'digest', auth: SECRET },
  });
  const handle = await e.acquire('acl:guarded');
  const dir = lockDirectory('/guarded', 'lock:acl:guarded');
  const [node] = await children(stranger, dir); // world may read (perms 'r'), nothing more
  expect(node).toMatch(/^_c_.*-lock-\d{10}$/);
  expect(await remove(stranger, `${dir}/${node}`)).toBe(ERR_NO_AUTH);
  expect(await remove(stranger, dir)).not.toBe(0);
  // Nor can it queue in front of or behind us: CREATE in the directory is ours alone.
  const rival = engine({ basePath: '/guarded' });
  await expect(rival.acquire('acl:guarded', { wait: 0 })).rejects.toMatchObject({
    name: 'LockBackendUnavailableError',
  });
  expect(handle.signal.aborted).toBe(false);
  expect(await children(stranger, dir)).toEqual([node]);

  // A session that has the credentials (an operator, or a Java service) can.
  const operator = await connectedZkClient(server.connectionString);
  operator.addAuthInfo?.('digest', Buffer.from(SECRET)); // sent at once, ahead of the remove
  try {
    expect(await remove(operator, `${dir}/${node}`)).toBe(0);
  } finally {
    operator.close();
  }
  await untilAborted(handle.signal, 10_000);
  expect(handle.signal.reason).toMatchObject({ name: 'LockLostError' });
});

it('two backends with the same credentials exclude each other as usual', async () => {
  const a = engine({
    basePath: '/guarded',
    acl: ACL,
    authInfo: [{ scheme: 'digest', auth: SECRET }],
  });
  const b = engine({
    basePath: '/guarded',
    acl: ACL,
    authInfo: [{ scheme: 'digest', auth: Buffer.from(SECRET) }],
  });
  const held = await a.acquire('acl:shared-secret');
  expect(await b.tryAcquire('acl:shared-secret')).toBeNull();
  await held.release();
  const next = await b.acquire('acl:shared-secret');
  expect(next.fencingToken > held.fencingToken).toBe(true);
  await next.release();
});

it('the ACL covers the base path the backend creates: a session without the credentials cannot lock there', async () => {
  await engine({
    basePath: '/guarded2',
    acl: ACL,
    authInfo: { scheme: 'digest', auth: SECRET },
  }).withLock('k', async () => undefined);
  await expect(
    engine({ basePath: '/guarded2' }).acquire('other', { wait: 0 }),
  ).rejects.toMatchObject({ name: 'LockBackendUnavailableError' });
});

it('by default nodes are open (Curator-compatible): any session may delete them', async () => {
  const e = engine({});
  const handle = await e.acquire('acl:open');
  const dir = lockDirectory('/locks', 'lock:acl:open');
  const [node] = await children(stranger, dir);
  expect(await remove(stranger, `${dir}/${node}`)).toBe(0);
  await untilAborted(handle.signal, 10_000);
});

it.each([
  [{ acl: [] }, 'acl'],
  [{ acl: [{ scheme: 'digest', id: 'x', perms: 'rwz' }] }, 'acl[0].perms'],
  [{ acl: [{ scheme: 'digest', id: 'x', perms: 0 }] }, 'acl[0].perms'],
  [{ acl: [{ id: 'x', perms: 31 }] }, 'acl[0]'],
  [{ authInfo: { scheme: 'digest' } }, 'authInfo'],
  [{ authInfo: [] }, 'authInfo'],
])('bad %p is rejected naming %p', (options, option) => {
  expect(
    () =>
      new ZooKeeperLockBackend({
        clientFactory: () => newZkClient('127.0.0.1:1', 1_000),
        ...options,
      } as never),
  ).toThrow(expect.objectContaining({ name: 'InvalidLockOptionsError', option }));
});

it('an authInfo error never repeats the secret', () => {
  const make = () =>
    new ZooKeeperLockBackend({
      clientFactory: () => newZkClient('127.0.0.1:1', 1_000),
      authInfo: { scheme: '', auth: 'user:topsecret' },
    });
  expect(make).toThrow(expect.objectContaining({ option: 'authInfo' }));
  expect(make).not.toThrow(/topsecret/);
});
