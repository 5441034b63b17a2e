import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { lockDirectory } from '../../lib/backends/zookeeper/zookeeper.nodes';
import type { ZooKeeperLockBackendOptions } from '../../lib/backends/zookeeper/zookeeper.options';
import { LockEngine, type LockEngineOptions } from '../../lib/core/lock-engine';
import { removeDir } from '../support/server-process';
import { connectedZkClient, newZkClient, ZooKeeperServer } from '../support/zookeeper-server';

type BackendOptions = Omit<ZooKeeperLockBackendOptions, 'client' | 'clientFactory'>;
type EngineDefaults = NonNullable<LockEngineOptions['defaults']>;

/** A process of another client library (Curator, kazoo) that an interop spec drives. */
export interface InteropToolSetup<T extends { stop(): Promise<void> }> {
  /** Compiles the tool (javac); its class dir is handed to start and removed after the file. */
  compile?: () => string;
  /** Starts the tool process against the server (classes: compile's dir, or '' without compile). */
  start: (connectionString: string, classes: string) => Promise<T>;
}

/**
 * What the ZooKeeper specs share, set up once per test file: a private ZooKeeper server, an admin
 * client that looks at the nodes, engines over backends of their own (clientFactory: each can
 * outlive a session) and, for the interop specs, a tool process of the other client library
 * (Curator, kazoo) on the same server. Everything is closed after the file. Keys are laid out as
 * `/locks/lock:<key>`: ours with the default basePath and keyPrefix, and Curator's and kazoo's.
 */
export function zooKeeperFixture<T extends { stop(): Promise<void> }>(setup?: InteropToolSetup<T>) {
  let server: ZooKeeperServer | undefined;
  let admin: ZooKeeperClientLike | undefined;
  let tool: T | undefined;
  let classes = '';
  const engines: LockEngine[] = [];
  const backends: ZooKeeperLockBackend[] = [];
  let n = 0;

  beforeAll(async () => {
    server = await ZooKeeperServer.start();
    if (setup?.compile) classes = setup.compile();
    tool = await setup?.start(server.connectionString, classes);
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
    if (!admin) throw new Error('zooKeeperFixture: used before beforeAll');
    return admin;
  };

  const open = (options: BackendOptions, defaults: EngineDefaults = {}) => {
    const backend = new ZooKeeperLockBackend({
      clientFactory: () => newZkClient((server as ZooKeeperServer).connectionString, 5_000),
      ...options,
    });
    backends.push(backend);
    const engine = new LockEngine({ backend, defaults: { ttl: 5_000, wait: 10_000, ...defaults } });
    engines.push(engine);
    return { engine, backend };
  };

  return {
    /** The admin client (after beforeAll). */
    get admin(): ZooKeeperClientLike {
      return connected();
    },
    /** Every backend engine() made, in order. */
    backends: backends as readonly ZooKeeperLockBackend[],
    /** A backend of its own (closed after the file) and an engine over it (ttl 5 s, wait 10 s by default). */
    open: (options: BackendOptions = {}, defaults: EngineDefaults = {}) => open(options, defaults),
    /** open()'s engine alone. */
    engine: (options: BackendOptions = {}) => open(options).engine,
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
