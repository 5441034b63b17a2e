import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { lockDirectory } from '../../lib/backends/zookeeper/zookeeper.nodes';
import type { ZooKeeperLockBackendOptions } from '../../lib/backends/zookeeper/zookeeper.options';
import { LockEngine } from '../../lib/core/lock-engine';
import { removeDir } from '../support/server-process';
import { connectedZkClient, newZkClient, ZooKeeperServer } from '../support/zookeeper-server';

export interface InteropToolSetup<T> {
  /** Compiles the tool (javac); its class dir is handed to start and removed after the file. */
  compile?: () => string;
  /** Starts the tool process against the server (classes: compile's dir, or '' without compile). */
  start: (connectionString: string, classes: string) => Promise<T>;
}

/**
 * What the interop specs (Curator, kazoo) share, set up once per test file: a private ZooKeeper
 * server, a tool process of the other client library on it, an admin client that looks at the
 * nodes, and engines over backends of their own (clientFactory: each can outlive a session).
 * Everything is closed after the file. The Curator and kazoo paths for a key are
 * `/locks/lock:<key>`, ours with the default basePath and keyPrefix.
 */
export function interopFixture<T extends { stop(): Promise<void> }>(setup: InteropToolSetup<T>) {
  let server: ZooKeeperServer | undefined;
  let admin: ZooKeeperClientLike | undefined;
  let tool: T | undefined;
  let classes = '';
  const engines: LockEngine[] = [];
  const backends: ZooKeeperLockBackend[] = [];
  let n = 0;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    if (setup.compile) classes = setup.compile();
    tool = await setup.start(server.connectionString, classes);
    admin = await connectedZkClient(server.connectionString);
  });

  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    await tool?.stop();
    admin?.close();
    await server?.destroy();
    if (classes) removeDir(classes);
  });

  const connected = (): ZooKeeperClientLike => {
    if (!admin) throw new Error('interop fixture: used before beforeAll');
    return admin;
  };

  return {
    /** The admin client (after beforeAll). */
    get admin(): ZooKeeperClientLike {
      return connected();
    },
    /** Every backend engine() made, in order. */
    backends: backends as readonly ZooKeeperLockBackend[],
    /** An engine over a backend of its own (ttl 5 s, wait 10 s by default). */
    engine: (options: Omit<ZooKeeperLockBackendOptions, 'client' | 'clientFactory'> = {}) => {
      const backend = new ZooKeeperLockBackend({
        clientFactory: () => newZkClient((server as ZooKeeperServer).connectionString, 5_000),
        ...options,
      });
      backends.push(backend);
      const e = new LockEngine({ backend, defaults: { ttl: 5_000, wait: 10_000 } });
      engines.push(e);
      return e;
    },
    /** The children of `path` ([] when it does not exist). */
    children: (path: string) =>
      new Promise<string[]>((resolve) =>
        connected().getChildren(path, (e, c) => resolve(e ? [] : c)),
      ),
    /** The data of the node at `path`, as UTF-8. */
    data: (path: string) =>
      new Promise<string>((resolve, reject) =>
        connected().getData(path, undefined as never, (e, d) =>
          e ? reject(e) : resolve(d ? d.toString('utf8') : ''),
        ),
      ),
    /** A fresh key per test: `<name>-<n>` for us, its directory `/locks/lock:<key>` for the other library. */
    fresh: (name: string) => {
      const key = `${name}-${++n}`;
      return { key, path: lockDirectory('/locks', `lock:${key}`) };
    },
    /** A fresh campaign name and its directory `/locks/lock:election:<name>`. */
    freshElection: (name: string) => {
      const election = `${name}-${++n}`;
      return { election, path: lockDirectory('/locks', `lock:election:${election}`) };
    },
  };
}
