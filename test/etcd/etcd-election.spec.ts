import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { EtcdCluster } from '../support/etcd-server';
import { eventually } from '../support/eventually';
import { etcdFixture } from './etcd-fixture';

/**
 * Campaigns use Go's concurrency.Election layout (issue 18 for etcd): the proposal is the value
 * of `NAME/<lease hex>`, NAME = the campaign's full key (keyPrefix + `election:<name>`, encoded
 * like a lock NAME), leader = the lowest create revision. So `etcdctl elect NAME` (Debian's
 * etcd-client 3.4) and our campaigns compete for one leadership, and `etcdctl elect -l NAME`
 * prints our leader's proposal.
 */
class Etcdctl {
  stdout = '';
  readonly exited: Promise<number | null>;
  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (d: Buffer) => (this.stdout += d.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }
  static elect(cluster: EtcdCluster, args: string[]): Etcdctl {
    return new Etcdctl(
      spawn('etcdctl', [`--endpoints=${cluster.hosts().join(',')}`, 'elect', ...args], {
        env: { ...process.env, ETCDCTL_API: '3' },
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
  }
  /** Lines printed so far (key, value, key, value, ...). */
  lines(): string[] {
    return this.stdout.split('\n').filter((l) => l.length > 0);
  }
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGINT');
    await this.exited;
  }
}

describe('etcd backend: leader election interop with etcdctl elect', () => {
  const etcd = etcdFixture();
  const tools: Etcdctl[] = [];

  afterEach(() => {
    for (const t of tools.splice(0)) t.child.kill('SIGKILL');
  });

  const KEY_PREFIX = 'app:';
  const name = (what: string) => `${what}-${randomBytes(4).toString('hex')}`;
  /** The election NAME etcdctl and Go use for our campaign `name`. */
  const electionName = (n: string) => `${KEY_PREFIX}election:${n}`;
  function engine() {
    const backend = new EtcdLockBackend({ client: etcd.client(), sessionTtl: 2_000 });
    return { engine: etcd.engine(backend, { ttl: 2_000 }, KEY_PREFIX), backend };
  }
  const candidates = async (n: string) =>
    (await etcd.admin.kv.range({ key: Buffer.from(`${n}/`), range_end: Buffer.from(`${n}0`) })).kvs;

  it('lays a campaign out as concurrency.Election: NAME/<lease hex> = proposal, on the session lease', async () => {
    const n = name('layout');
    const { engine: e, backend } = engine();
    const term = await e.leadership(n, { proposal: 'node-a:4242' }).whenLeader();
    const [kv] = await candidates(electionName(n));
    const lease = backend.sessionLeaseId as string;
    expect(kv.key.toString()).toBe(`${electionName(n)}/${BigInt(lease).toString(16)}`);
    expect(kv.value.toString()).toBe('node-a:4242');
    expect(kv.lease).toBe(lease);
    expect(term.fencingToken).toBe(BigInt(kv.create_revision));
  });

  it('while etcdctl leads, our campaign waits; when etcdctl ends (resigning), ours leads', async () => {
    const n = name('theirs');
    const theirs = Etcdctl.elect(etcd.cluster, [electionName(n), 'etcdctl-proposal']);
    tools.push(theirs);
    await eventually(() => theirs.lines().length >= 2, 20_000);
    expect(theirs.lines()[1]).toBe('etcdctl-proposal');
    const { engine: e } = engine();
    const ours = e.leadership(n, { proposal: 'ours' });
    await eventually(async () => (await candidates(electionName(n))).length === 2);
    expect(ours.isLeader).toBe(false);
    await theirs.stop();
    const term = await ours.whenLeader();
    expect(term.held).toBe(true);
    const kvs = await candidates(electionName(n));
    expect(kvs.map((kv) => kv.value.toString())).toEqual(['ours']);
  });

  it('while etcdctl leads and its process is killed, ours leads once its lease is gone', async () => {
    const n = name('killed');
    const theirs = Etcdctl.elect(etcd.cluster, [electionName(n), 'doomed']);
    tools.push(theirs);
    await eventually(() => theirs.lines().length >= 2, 20_000);
    const [their] = await candidates(electionName(n));
    const { engine: e } = engine();
    const ours = e.leadership(n, { proposal: 'ours' });
    await eventually(async () => (await candidates(electionName(n))).length === 2);
    theirs.child.kill('SIGKILL');
    await theirs.exited;
    expect(ours.isLeader).toBe(false);
    // etcdctl's session TTL is 60 s: its lease ending is what expiry would do, sooner.
    await etcd.admin.leaseClient.leaseRevoke({ ID: their.lease });
    const term = await ours.whenLeader();
    expect(term.fencingToken > BigInt(their.create_revision)).toBe(true);
  });

  it('while ours leads, etcdctl elect -l prints our proposal and etcdctl elect waits until we resign', async () => {
    const n = name('ours');
    const { engine: e } = engine();
    const ours = e.leadership(n, { proposal: 'our-proposal' });
    await ours.whenLeader();
    const observer = Etcdctl.elect(etcd.cluster, ['-l', electionName(n)]);
    tools.push(observer);
    await eventually(() => observer.lines().length >= 2, 20_000);
    expect(observer.lines()[0]).toMatch(new RegExp(`^${electionName(n)}/[0-9a-f]+$`));
    expect(observer.lines()[1]).toBe('our-proposal');

    const theirs = Etcdctl.elect(etcd.cluster, [electionName(n), 'etcdctl-next']);
    tools.push(theirs);
    await eventually(async () => (await candidates(electionName(n))).length === 2);
    expect(theirs.stdout).toBe('');
    await ours.resign();
    await eventually(() => theirs.lines().length >= 2, 20_000);
    expect(theirs.lines()[1]).toBe('etcdctl-next');
    // The observer follows the leadership to etcdctl's proposal.
    await eventually(() => observer.lines().includes('etcdctl-next'), 20_000);
    expect(ours.isLeader).toBe(false);
  });
});
