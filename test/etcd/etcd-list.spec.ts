import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import { EtcdCluster } from '../support/etcd-server';
import { eventually } from '../support/server-process';

/**
 * list(prefix, limit) on etcd: the held keys under a prefix, from bounded keys-only range reads
 * (issue 17.4): locks, shared locks, elections and semaphores alike; a long queue on one key
 * costs one page; foreign keys under the range (etcdctl locks whose NAME holds '/') are not ours.
 */
describe('etcd backend: list(prefix, limit)', () => {
  let cluster: EtcdCluster;
  const clients: Etcd3[] = [];
  const engines: LockEngine[] = [];
  beforeAll(async () => {
    cluster = await EtcdCluster.start(1);
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    for (const c of clients) c.close();
    await cluster?.destroy();
  });
  function engine(prefix = 'pfx/') {
    const client = new Etcd3({ hosts: cluster.hosts() });
    clients.push(client);
    const backend = new EtcdLockBackend({ client, sessionTtl: 5_000, prefix });
    const e = new LockEngine({
      backend,
      keyPrefix: 'app:',
      defaults: { ttl: 5_000, wait: 10_000 },
    });
    engines.push(e);
    return { engine: e, backend };
  }

  it('lists held locks, readers, semaphores and elections under a prefix, each once, within the limit', async () => {
    const ns = `ls-${randomBytes(3).toString('hex')}`;
    const [a, b] = [engine(), engine()];
    const held = [
      await a.engine.acquire(`${ns}:order:1`),
      await a.engine.acquire(`${ns}:order:2/with%slash`),
      await a.engine.acquire(`${ns}:report`, { mode: 'shared' }),
      await b.engine.acquire(`${ns}:report`, { mode: 'shared' }),
      await a.engine.acquire(`${ns}:pool`, { permits: 3 }),
      await b.engine.acquire(`${ns}:pool`, { permits: 3 }),
    ];
    await a.engine.leadership(`${ns}-jobs`).whenLeader();
    // A queue of waiters on one key is listed once.
    const waiting = b.engine.acquire(`${ns}:order:1`).then((h) => h.release());
    // A foreign etcdctl lock whose NAME holds '/' lives in our range but is not one of our keys.
    const foreign = spawn(
      'etcdctl',
      [`--endpoints=${cluster.hosts()[0]}`, 'lock', '--ttl=5', `pfx/app:${ns}:x/y`],
      { env: { ...process.env, ETCDCTL_API: '3' }, stdio: 'ignore' },
    );
    try {
      await eventually(async () => {
        const keys = await clients[0].getAll().prefix(`pfx/app:${ns}:x/y/`).keys();
        return keys.length === 1;
      }, 20_000);
      const all = (await a.engine.operator.list(`${ns}`)).sort();
      // The election is `election:<name>`: not under this prefix.
      expect(all).toEqual([
        `${ns}:order:1`,
        `${ns}:order:2/with%slash`,
        `${ns}:pool`,
        `${ns}:report`,
      ]);
      expect((await a.engine.operator.list(`${ns}:order`)).sort()).toEqual([
        `${ns}:order:1`,
        `${ns}:order:2/with%slash`,
      ]);
      expect(await a.engine.operator.list(`election:${ns}`)).toEqual([`election:${ns}-jobs`]);
      const two = await a.engine.operator.list(`${ns}:`, undefined, 2);
      expect(two.length).toBe(2);
      expect(await a.backend.list(`app:${ns}:none`, 10)).toEqual([]);
    } finally {
      foreign.kill('SIGKILL');
    }
    for (const h of held) await h.release();
    await waiting;
    expect(await a.engine.operator.list(`${ns}:`)).toEqual([]);
  });
});
