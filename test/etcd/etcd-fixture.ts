import { Etcd3 } from 'etcd3';
import { LockEngine, type LockEngineOptions } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { EtcdCluster } from '../support/etcd-server';

type EngineDefaults = NonNullable<LockEngineOptions['defaults']>;

/**
 * What the single-node etcd specs share, set up once per test file: a private etcd, an admin
 * client that looks at the keys, clients of their own for each "process" (closed after the file)
 * and engines over backends built on them (keyPrefix '', closed after each test).
 */
export function etcdFixture() {
  let up: { cluster: EtcdCluster; admin: Etcd3 } | undefined;
  const clients: Etcd3[] = [];
  const engines: LockEngine[] = [];

  beforeAll(async () => {
    const cluster = await EtcdCluster.start(1);
    up = { cluster, admin: new Etcd3({ hosts: cluster.hosts() }) };
  });

  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
  });

  afterAll(async () => {
    for (const c of [up?.admin, ...clients]) c?.close();
    await up?.cluster.destroy();
  });

  const started = () => {
    if (!up) throw new Error('etcdFixture: used before beforeAll');
    return up;
  };

  return {
    /** The private etcd (after beforeAll). */
    get cluster(): EtcdCluster {
      return started().cluster;
    },
    /** The admin client (after beforeAll). */
    get admin(): Etcd3 {
      return started().admin;
    },
    /** A client of its own (closed after the file), to the private etcd unless `hosts` says else. */
    client: (hosts: string[] = started().cluster.hosts()): Etcd3 => {
      const c = new Etcd3({ hosts });
      clients.push(c);
      return c;
    },
    /** An engine over `backend` with these defaults (keyPrefix '' unless given), closed after the test. */
    engine: (backend: LockBackend, defaults: EngineDefaults, keyPrefix = ''): LockEngine => {
      const e = new LockEngine({ backend, keyPrefix, defaults });
      engines.push(e);
      return e;
    },
  };
}
