import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { EtcdCluster } from '../support/etcd-server';
import { eventually } from '../support/eventually';
import { etcdFixture } from './etcd-fixture';

/**
 * Interop with etcd's own lock (`etcdctl lock`, Debian's etcd-client 3.4, i.e. Go's
 * concurrency.Mutex) on one NAME, both directions, and the exact key layout they share.
 */
class EtcdctlLock {
  stdout = '';
  readonly exited: Promise<number | null>;
  private constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (d: Buffer) => (this.stdout += d.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }
  /** `etcdctl lock NAME [-- command...]`: holds until SIGINT (no command) or until the command ends. */
  static start(cluster: EtcdCluster, name: string, command: string[] = []): EtcdctlLock {
    const args = [`--endpoints=${cluster.hosts().join(',')}`, 'lock', '--ttl=2', name, ...command];
    return new EtcdctlLock(
      spawn('etcdctl', args, {
        env: { ...process.env, ETCDCTL_API: '3' },
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
  }
  /** Its contender key, printed once it holds the lock (no-command form). */
  async held(): Promise<string> {
    return eventually(() => this.stdout.trim().split('\n')[0], 20_000);
  }
  async unlock(): Promise<void> {
    this.child.kill('SIGINT');
    await this.exited;
  }
}

describe('etcd backend: interop with etcdctl lock', () => {
  const etcd = etcdFixture();
  const locks: EtcdctlLock[] = [];

  afterEach(() => {
    for (const l of locks.splice(0)) l.child.kill('SIGKILL');
  });

  const name = (what: string) => `interop:${what}:${randomBytes(4).toString('hex')}`;
  function engine() {
    const backend = new EtcdLockBackend({ client: etcd.client(), sessionTtl: 2_000 });
    return { engine: etcd.engine(backend, { ttl: 2_000, wait: 20_000 }), backend };
  }
  const contenders = async (n: string) => (await etcd.admin.getAll().prefix(`${n}/`).keys()).sort();
  const createRevision = async (key: string) =>
    BigInt((await etcd.admin.kv.range({ key: Buffer.from(key) })).kvs[0].create_revision);

  it('uses the key layout of etcdctl lock: NAME/<session lease id in lowercase hex>, empty value, on the session lease', async () => {
    const n = name('layout');
    const { engine: e, backend } = engine();
    const h = await e.acquire(n);
    const lease = backend.sessionLeaseId as string;
    const [kv] = (
      await etcd.admin.kv.range({ key: Buffer.from(`${n}/`), range_end: Buffer.from(`${n}0`) })
    ).kvs;
    expect(kv.key.toString()).toBe(`${n}/${BigInt(lease).toString(16)}`);
    expect(kv.value.length).toBe(0);
    expect(kv.lease).toBe(lease);
    expect(h.fencingToken).toBe(BigInt(kv.create_revision));
    await h.release();
    expect(await contenders(n)).toEqual([]);
  });

  it('while etcdctl holds NAME our acquire queues, and gets the lock once etcdctl lets go', async () => {
    const n = name('theirs');
    const theirs = EtcdctlLock.start(etcd.cluster, n);
    locks.push(theirs);
    const theirKey = await theirs.held();
    expect(theirKey).toMatch(new RegExp(`^${n}/[0-9a-f]+$`));
    const { engine: e } = engine();
    expect(await e.tryAcquire(n)).toBeNull();
    let granted = false;
    const ours = e.acquire(n).then((h) => ((granted = true), h));
    await eventually(async () => (await contenders(n)).length === 2);
    expect(granted).toBe(false);
    const theirRevision = await createRevision(theirKey);
    await theirs.unlock();
    const h = await ours;
    expect(await contenders(n)).not.toContain(theirKey);
    expect(h.fencingToken > theirRevision).toBe(true);
    await h.release();
  });

  it('while we hold NAME etcdctl waits, and gets the lock once we release', async () => {
    const n = name('ours');
    const { engine: e } = engine();
    const h = await e.acquire(n);
    const theirs = EtcdctlLock.start(etcd.cluster, n, ['echo', 'etcdctl-holds']);
    locks.push(theirs);
    await eventually(async () => (await contenders(n)).length === 2);
    expect(theirs.stdout).toBe('');
    await h.release();
    expect(await theirs.exited).toBe(0);
    expect(theirs.stdout).toContain('etcdctl-holds');
  });

  it('shared: our readers exclude etcdctl and are excluded by it', async () => {
    const n = name('shared');
    const [a, b] = [engine(), engine()];
    const r1 = await a.engine.acquire(n, { mode: 'shared' });
    const r2 = await b.engine.acquire(n, { mode: 'shared', wait: 0 });
    const writer = EtcdctlLock.start(etcd.cluster, n, ['echo', 'etcdctl-writes']);
    locks.push(writer);
    await eventually(async () => (await contenders(n)).length === 3);
    await r1.release();
    expect(writer.stdout).toBe('');
    await r2.release();
    expect(await writer.exited).toBe(0);
    expect(writer.stdout).toContain('etcdctl-writes');

    const holder = EtcdctlLock.start(etcd.cluster, n);
    locks.push(holder);
    await holder.held();
    expect(await a.engine.tryAcquire(n, { mode: 'shared' })).toBeNull();
    const reader = b.engine.acquire(n, { mode: 'shared' });
    await eventually(async () => (await contenders(n)).length === 2);
    await holder.unlock();
    const r3 = await reader;
    expect(r3.mode).toBe('shared');
    await r3.release();
  });
});
