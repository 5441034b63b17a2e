import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { eventually } from '../support/eventually';
import { etcdFixture } from './etcd-fixture';

/**
 * list(prefix, limit) on etcd: the held keys under a prefix, from bounded keys-only range reads
 * (issue 17.4): locks, shared locks, elections and semaphores alike; a long queue on one key
 * costs one page; foreign keys under the range (etcdctl locks whose NAME holds '/') are not ours.
 */
describe('etcd backend: list(prefix, limit)', () => {
  const etcd = etcdFixture();
  function engine(prefix = 'pfx/') {
    const backend = new EtcdLockBackend({ client: etcd.client(), sessionTtl: 5_000, prefix });
    return { engine: etcd.engine(backend, { ttl: 5_000, wait: 10_000 }, 'app:'), backend };
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
      [`--endpoints=${etcd.cluster.hosts()[0]}`, 'lock', '--ttl=5', `pfx/app:${ns}:x/y`],
      { env: { ...process.env, ETCDCTL_API: '3' }, stdio: 'ignore' },
    );
    try {
      await eventually(async () => {
        const keys = await etcd.admin.getAll().prefix(`pfx/app:${ns}:x/y/`).keys();
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

  it('lists keys holding U+2028 and U+2029 (a regular expression dot stops at them)', async () => {
    const ns = `ls-${randomBytes(3).toString('hex')}`;
    const { engine: e } = engine();
    const keys = [`${ns}:a\u2028b`, `${ns}:c\u2029d`, `${ns}:plain`];
    const held = await Promise.all(keys.map((k) => e.acquire(k)));
    expect((await e.operator.list(ns)).sort()).toEqual([...keys].sort());
    for (const h of held) await h.release();
  });
});
