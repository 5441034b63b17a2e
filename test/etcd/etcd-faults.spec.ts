import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { LockLostError } from '../../lib/errors/lock-lost.error';
import { untilAborted } from '../conformance/conformance-tools';
import { EtcdCluster } from '../support/etcd-server';
import { eventually } from '../support/eventually';
import { HolderProcess } from '../support/holder-harness';

/** A holder in its own process (holder.process.ts): its session's TTL and its lock ttl, in ms. */
const startHolder = (hosts: string[], key: string, sessionTtl: number, ttl: number) =>
  HolderProcess.start(join(__dirname, 'holder.process.ts'), [
    hosts.join(','),
    key,
    String(sessionTtl),
    String(ttl),
  ]);

/**
 * Faults against a real 3-member etcd cluster: the leader dies under a held lock and queued
 * waiters; holder processes are SIGKILLed or SIGSTOPped past their lease; the client is cut off
 * from the members it talks to. Timings are reported on stdout, never asserted.
 */
describe('etcd backend: faults (3-member cluster)', () => {
  let cluster: EtcdCluster;
  const clients: Etcd3[] = [];
  const engines: LockEngine[] = [];
  const holders: HolderProcess[] = [];

  beforeAll(async () => {
    cluster = await EtcdCluster.start(3);
  });

  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
    await Promise.all(holders.splice(0).map((h) => h.kill()));
    for (const m of cluster.members) m.resume();
    await cluster.restart();
  });

  afterAll(async () => {
    for (const c of clients.splice(0)) c.close();
    await cluster?.destroy();
  });

  const key = (what: string) => `fault:${what}:${randomBytes(4).toString('hex')}`;
  function engine(sessionTtl: number, hosts = cluster.hosts()) {
    const client = new Etcd3({ hosts });
    clients.push(client);
    const backend = new EtcdLockBackend({ client, sessionTtl });
    const e = new LockEngine({
      backend,
      keyPrefix: '',
      defaults: { ttl: sessionTtl, wait: 30_000 },
    });
    engines.push(e);
    return { engine: e, backend, client };
  }

  it('leader killed while a lock is held and two waiters queue: no double grant, FIFO progress after the election', async () => {
    const k = key('leader');
    const [a, b, c] = [engine(5_000), engine(5_000), engine(5_000)];
    const held = await a.engine.acquire(k);
    const granted: string[] = [];
    let holding = 1;
    let overlaps = 0;
    const waiter = (name: string, e: LockEngine) =>
      e.acquire(k).then((h) => {
        if (holding > 0) overlaps++;
        holding++;
        granted.push(name);
        return h;
      });
    const wb = waiter('b', b.engine);
    await eventually(
      async () =>
        (await cluster.etcdctl('get', '--prefix', '--keys-only', `${k}/`))
          .trim()
          .split('\n')
          .filter(Boolean).length === 2,
    );
    const wc = waiter('c', c.engine);
    await eventually(
      async () =>
        (await cluster.etcdctl('get', '--prefix', '--keys-only', `${k}/`))
          .trim()
          .split('\n')
          .filter(Boolean).length === 3,
    );

    const leader = await cluster.leader();
    const killedAt = Date.now();
    await leader.kill();
    const newLeader = await cluster.leader();
    console.log(`etcd faults: new leader after ${Date.now() - killedAt} ms`);
    expect(newLeader).not.toBe(leader);
    expect(granted).toEqual([]);
    expect(held.held).toBe(true);

    holding--;
    await held.release();
    const hb = await wb;
    expect(granted).toEqual(['b']);
    expect(hb.fencingToken > held.fencingToken).toBe(true);
    holding--;
    await hb.release();
    const hc = await wc;
    expect(granted).toEqual(['b', 'c']);
    expect(hc.fencingToken > hb.fencingToken).toBe(true);
    expect(overlaps).toBe(0);
    await hc.release();
  });

  it('a SIGKILLed holder process: its lock frees once its session lease expires', async () => {
    const k = key('sigkill');
    const holder = startHolder(cluster.hosts(), k, 2_000, 2_000);
    holders.push(holder);
    const acquired = await holder.next('acquired');
    const { engine: e } = engine(2_000);
    expect(await e.tryAcquire(k)).toBeNull();
    const killedAt = Date.now();
    await holder.kill();
    const next = await e.acquire(k, { wait: 20_000 });
    console.log(
      `etcd faults: lock of a SIGKILLed holder (session TTL 2 s) free after ${Date.now() - killedAt} ms`,
    );
    expect(next.fencingToken > BigInt(acquired.token as string)).toBe(true);
    await next.release();
  });

  it('a holder SIGSTOPped past its lease: another owner gets a larger token; on SIGCONT its signal aborts before any renewal goes out', async () => {
    const k = key('sigstop');
    // Lock ttl 3 s: the watchdog renews every second, so renewals are due when the process resumes.
    const holder = startHolder(cluster.hosts(), k, 2_000, 3_000);
    holders.push(holder);
    const acquired = await holder.next('acquired');
    await holder.next('renew-result');
    holder.stop();
    const stoppedAt = Date.now();
    const { engine: e } = engine(2_000);
    const next = await e.acquire(k, { wait: 20_000 });
    console.log(
      `etcd faults: lock of a SIGSTOPped holder taken over after ${Date.now() - stoppedAt} ms`,
    );
    expect(next.fencingToken > BigInt(acquired.token as string)).toBe(true);

    const seen = holder.messages.length;
    holder.cont();
    const lost = await holder.next('lost', seen);
    expect(String(lost.reason)).toMatch(/session/);
    const after = holder.messages.slice(seen);
    console.log(
      `etcd faults: after SIGCONT the holder reported ${after.map((m) => m.type).join(', ')} (${lost.reason})`,
    );
    // Every renewal the resumed process attempted found the loss locally, before sending anything...
    for (const m of after.filter((m) => m.type === 'renew'))
      expect(m.abortedBeforeRequest).toBe(true);
    // ...and no renewal confirmed the lock after the pause.
    expect(
      after.filter(
        (m) =>
          m.type === 'renew-result' &&
          Array.isArray(m.result) &&
          (m.result as boolean[]).includes(true),
      ),
    ).toEqual([]);
    expect(
      after.filter((m) => m.type === 'lost' || m.type === 'renew-result').map((m) => m.type)[0],
    ).toBe('lost');
    await next.release();
  });

  it('a release that failed (its only member down) is retried until done: the live session would never free the lock', async () => {
    const [m0] = cluster.members;
    // Session TTL 10 s: it must outlive etcd3's default circuit breaker (5 s open after 3 failures on a host).
    const holder = engine(10_000, [m0.url]);
    const other = engine(2_000, cluster.hosts(cluster.members.slice(1)));
    const k = key('release-cut');
    const h = await holder.engine.acquire(k);
    const lease = holder.backend.sessionLeaseId;
    await m0.kill();
    try {
      await expect(h.release()).rejects.toBeInstanceOf(LockBackendUnavailableError);
    } finally {
      await m0.start();
    }
    const next = await other.engine.acquire(k, { wait: 20_000 });
    // Freed by the finished release, not by the holder's session expiring: that session lives on.
    expect(holder.backend.sessionLeaseId).toBe(lease);
    expect(next.fencingToken > h.fencingToken).toBe(true);
    await next.release();
  });

  it('client cut off from its member (SIGSTOP): LockBackendUnavailableError within the wait budget, held lock lost, recovery after', async () => {
    const [m0] = cluster.members;
    const { engine: e } = engine(2_000, [m0.url]);
    const held = await e.acquire(key('cut-held'));
    m0.pause();
    try {
      const started = Date.now();
      await expect(e.acquire(key('cut'), { wait: 500 })).rejects.toBeInstanceOf(
        LockBackendUnavailableError,
      );
      console.log(
        `etcd faults: acquire against a silent member failed in ${Date.now() - started} ms (budget max(wait + 100, 2000))`,
      );
      const reason = await untilAborted(held.signal, 20_000);
      expect(reason).toBeInstanceOf(LockLostError);
      // The rest of the cluster has quorum: another client takes the lock once the lease expired.
      const other = engine(2_000, cluster.hosts(cluster.members.slice(1)));
      const taken: LockHandle = await other.engine.acquire(held.key, { wait: 20_000 });
      expect(taken.fencingToken > held.fencingToken).toBe(true);
      await taken.release();
    } finally {
      m0.resume();
    }
    const after = await eventually(() => e.acquire(key('cut-after'), { wait: 1_000 }), 30_000, 200);
    expect(after.held).toBe(true);
    await after.release();
  });
});
