import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import type { ZooKeeperClientLike } from '../../lib/backends/zookeeper/zookeeper.client';
import { lockDirectory } from '../../lib/backends/zookeeper/zookeeper.nodes';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import {
  connectedZkClient,
  newZkClient,
  ZooKeeperEnsemble,
  ZooKeeperServer,
} from '../support/zookeeper-server';
import { TcpProxy } from '../support/tcp-proxy';
import { describeLockConformance, type ConformanceFixture } from './lock-conformance';

/** Session timeout of every backend's client: a silent holder's locks vanish after this long. */
const SESSION_MS = 1_500;

/**
 * Every backend talks to the servers through its own TcpProxy, so `crash` can make exactly that
 * process go silent (its bytes stop flowing; the server expires its session) without touching the
 * others. Backends get a clientFactory, so they open a new session after an expiry or an outage.
 */
function fixture(
  ports: () => number[],
  outage: ConformanceFixture['outage'],
): () => Promise<ConformanceFixture> {
  return async () => {
    const proxies = new Map<LockBackend, TcpProxy>();
    const admin: ZooKeeperClientLike = await connectedZkClient(
      ports()
        .map((p) => `127.0.0.1:${p}`)
        .join(','),
    );
    const list = (path: string) =>
      new Promise<string[]>((resolve) => admin.getChildren(path, (e, c) => resolve(e ? [] : c)));
    const remove = (path: string) =>
      new Promise<void>((resolve) => admin.remove(path, -1, () => resolve()));
    return {
      ttl: SESSION_MS,
      createBackend: async () => {
        const proxy = await TcpProxy.start(ports().map((port) => ({ port })));
        const backend = new ZooKeeperLockBackend({
          clientFactory: () => newZkClient(proxy.connectionString, SESSION_MS),
          sessionTimeout: SESSION_MS,
        });
        proxies.set(backend, proxy);
        return backend;
      },
      forceDelete: async (fullKey) => {
        const dir = lockDirectory('/locks', fullKey);
        for (const child of await list(dir)) await remove(`${dir}/${child}`);
      },
      crash: async (backend) => proxies.get(backend)?.blackhole(),
      outage,
      closeAll: async () => {
        admin.close();
        await Promise.all([...proxies.values()].map((p) => p.close()));
        proxies.clear();
      },
    };
  };
}

let server: ZooKeeperServer;

describeLockConformance({
  name: 'zookeeper standalone',
  setup: async () => {
    server = await ZooKeeperServer.start();
    return fixture(() => [server.port], {
      stop: () => server.kill(),
      start: () => server.start(),
    })();
  },
  teardown: async () => server?.destroy(),
});

let ensemble: ZooKeeperEnsemble;

describeLockConformance({
  name: 'zookeeper 3-server ensemble',
  setup: async () => {
    ensemble = await ZooKeeperEnsemble.start(3);
    return fixture(() => ensemble.ports, {
      stop: async () => {
        await Promise.all(ensemble.servers.map((s) => s.kill()));
      },
      start: async () => {
        await Promise.all(ensemble.servers.map((s) => s.start()));
        await Promise.all(ensemble.servers.map((_, i) => ensemble.untilServing(i)));
      },
    })();
  },
  teardown: async () => ensemble?.destroy(),
});
