import { randomBytes } from 'node:crypto';
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { LockEngine } from '../../lib/core/lock-engine';
import type { BackendAcquireRequest } from '../../lib/interfaces/lock-backend.interface';
import { connectedZkClient, newZkClient, ZooKeeperServer } from '../support/zookeeper-server';

/**
 * Bad input against a real server: hostile names stay ONE node under the base path (never another
 * path), impossible names and options fail with InvalidLockOptionsError naming the option, the
 * value and what is allowed, and nothing is left locked. The server grants sessions of 200 ms to 10 s.
 */
let server: ZooKeeperServer;
let admin: ZooKeeperClientLike;
const backends: ZooKeeperLockBackend[] = [];

const children = (path: string) =>
  new Promise<string[]>((resolve) => admin.getChildren(path, (e, c) => resolve(e ? [] : c)));
const exists = (path: string) =>
  new Promise<boolean>((resolve) => admin.exists(path, (e, s) => resolve(!e && !!s)));

function backend(
  options: Partial<ConstructorParameters<typeof ZooKeeperLockBackend>[0]> = {},
  sessionTimeout = 5_000,
): ZooKeeperLockBackend {
  const b = new ZooKeeperLockBackend({
    clientFactory: () => newZkClient(server.connectionString, sessionTimeout),
    ...options,
  });
  backends.push(b);
  return b;
}

function request(key: string, wait = 0): BackendAcquireRequest {
  return {
    key,
    owner: randomBytes(16).toString('hex'),
    mode: 'exclusive',
    ttl: 5_000,
    wait,
    signal: new AbortController().signal,
    onLost: () => undefined,
  };
}

beforeAll(async () => {
  server = await ZooKeeperServer.start({ minSessionTimeout: 200, maxSessionTimeout: 10_000 });
  admin = await connectedZkClient(server.connectionString);
});

afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  admin?.close();
  await server?.destroy();
});

it('names with /, .., ., NUL and control characters each become one node directly under the base path', async () => {
  const b = backend({ basePath: '/bad' });
  const hostile = [
    'a/b',
    '../escape',
    '..',
    '.',
    'x\u0000y',
    'tab\there',
    '/absolute',
    'a/../../zookeeper',
  ];
  const results = [];
  for (const key of hostile) {
    const req = request(key);
    const r = await b.tryAcquire(req);
    expect(r.acquired).toBe(true);
    results.push(req);
  }
  const dirs = await children('/bad');
  expect(dirs.sort()).toEqual(
    [
      '%2E',
      '%2E%2E',
      '%2Fabsolute',
      '..%2Fescape',
      'a%2F..%2F..%2Fzookeeper',
      'a%2Fb',
      'tab%09here',
      'x%00y',
    ].sort(),
  );
  expect(await exists('/bad/a')).toBe(false);
  expect(await exists('/escape')).toBe(false);
  expect(await children('/zookeeper')).not.toContain('escape');
  for (const req of results) await b.release(req);
  for (const dir of dirs) expect(await children(`/bad/${dir}`)).toEqual([]);
});

it('an empty name and a name past the node-name limit are rejected, naming "key", and lock nothing', async () => {
  const b = backend({ basePath: '/bad-names' });
  await expect(b.tryAcquire(request(''))).rejects.toMatchObject({
    name: 'InvalidLockOptionsError',
    option: 'key',
  });
  await expect(b.tryAcquire(request('€'.repeat(400)))).rejects.toMatchObject({
    name: 'InvalidLockOptionsError',
    option: 'key',
    message: expect.stringMatching(/at most 1024 characters/),
  });
  const engine = new LockEngine({ backend: b });
  await expect(engine.acquire('k'.repeat(600))).rejects.toMatchObject({
    option: 'key',
    message: expect.stringMatching(/at most 512 characters/),
  });
  await engine.close();
  expect(await exists('/bad-names')).toBe(false);
});

it.each([
  [60_000, /negotiated 10000 ms/],
  [50, /negotiated 200 ms/],
])(
  'a session timeout of %p ms, outside what the server negotiates, fails the acquire clearly',
  async (asked, negotiated) => {
    const b = backend({ sessionTimeout: asked, basePath: '/bad-session' }, asked);
    await expect(b.tryAcquire(request('k'))).rejects.toMatchObject({
      name: 'InvalidLockOptionsError',
      option: 'sessionTimeout',
      message: expect.stringMatching(negotiated),
    });
    expect(await exists('/bad-session')).toBe(false);
  },
);

/** Never called: construction fails before any client is made. */
const unusedFactory: () => unknown = () => undefined;

it.each([
  [{}, 'client'],
  [{ client: {} }, 'client'],
  [{ client: null }, 'client'],
  [{ clientFactory: 'zk' }, 'clientFactory'],
  [{ clientFactory: unusedFactory, basePath: 'locks' }, 'basePath'],
  [{ clientFactory: unusedFactory, basePath: '/a/../b' }, 'basePath'],
  [{ clientFactory: unusedFactory, curatorRecipe: 'semaphore' }, 'curatorRecipe'],
  [{ clientFactory: unusedFactory, sessionTimeout: -1 }, 'sessionTimeout'],
  [{ clientFactory: unusedFactory, sessionTimeout: 1.5 }, 'sessionTimeout'],
  [{ clientFactory: unusedFactory, retries: 3 }, 'retries'],
])('constructor options %p are rejected naming %p', (options, option) => {
  expect(() => new ZooKeeperLockBackend(options as never)).toThrow(
    expect.objectContaining({ name: 'InvalidLockOptionsError', option }),
  );
});

it('a user client that is never connected: the wait ends in LockBackendUnavailableError, not a busy-lock timeout', async () => {
  const client = newZkClient(server.connectionString, 5_000); // the user forgot client.connect()
  const b = new ZooKeeperLockBackend({ client });
  backends.push(b);
  const engine = new LockEngine({ backend: b });
  await expect(engine.acquire('never', { wait: 300 })).rejects.toMatchObject({
    name: 'LockBackendUnavailableError',
  });
  await engine.close();
});
