import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { etcdLockPrefix } from '../../lib/backends/etcd/etcd.keys';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { EtcdCluster } from '../support/etcd-server';
import { describeLockConformance, type ConformanceFixture } from './lock-conformance';

/**
 * The shared suite against real etcd (Debian's etcd-server 3.4), a single node and a 3-member
 * cluster on private loopback ports. Every backend gets its own Etcd3 client (its own "process");
 * a crash closes that client, so its session lease stops being kept alive and must expire.
 */
const SESSION_TTL_MS = 2_000;

function etcdFixture(size: number) {
  let cluster: EtcdCluster | undefined;
  const setup = async (): Promise<ConformanceFixture> => {
    cluster = await EtcdCluster.start(size);
    const c = cluster;
    const clients = new Set<Etcd3>();
    const clientOf = new Map<LockBackend, Etcd3>();
    const admin = new Etcd3({ hosts: c.hosts() });
    clients.add(admin);
    return {
      ttl: SESSION_TTL_MS,
      createBackend: () => {
        const client = new Etcd3({ hosts: c.hosts() });
        clients.add(client);
        const backend = new EtcdLockBackend({ client, sessionTtl: SESSION_TTL_MS });
        clientOf.set(backend, client);
        return backend;
      },
      forceDelete: async (fullKey) => {
        await admin.delete().prefix(etcdLockPrefix(fullKey));
      },
      crash: async (backend) => {
        clientOf.get(backend)?.close();
      },
      outage: { stop: () => c.stop(), start: () => c.restart() },
      closeAll: async () => {
        for (const client of clients) client.close();
      },
    };
  };
  const teardown = async () => {
    await cluster?.destroy();
  };
  return { setup, teardown };
}

describeLockConformance({ name: 'etcd (single node)', ...etcdFixture(1) });
describeLockConformance({ name: 'etcd (3-member cluster)', ...etcdFixture(3) });
