import { randomBytes } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import { EtcdCluster } from '../support/etcd-server';

/**
 * A backend that owns its client (issue 12.3): `clientFactory` is called once, on first use (it
 * may return a Promise, as a config lookup would), and the backend closes what it created; a
 * `client` you pass is never closed. Against a private etcd.
 */
describe('etcd backend: clientFactory', () => {
  let cluster: EtcdCluster;
  const engines: LockEngine[] = [];
  const key = () => `factory:${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    cluster = await EtcdCluster.start(1);
  });

  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    await cluster?.destroy();
  });

  function engine(backend: EtcdLockBackend) {
    const e = new LockEngine({ backend, keyPrefix: '', defaults: { ttl: 2_000, wait: 2_000 } });
    engines.push(e);
    return e;
  }

  it('creates the client once, on first use (sync or async factory), and closes it on close()', async () => {
    const made: Etcd3[] = [];
    const backend = new EtcdLockBackend({
      sessionTtl: 2_000,
      clientFactory: async () => {
        const c = new Etcd3({ hosts: cluster.hosts() });
        made.push(c);
        return c;
      },
    });
    expect(made).toHaveLength(0); // nothing connects at construction
    const e = engine(backend);
    const [a, b] = await Promise.all([e.acquire(key()), e.acquire(key())]);
    expect(made).toHaveLength(1);
    await Promise.all([a.release(), b.release()]);
    await e.close();
    await expect(made[0].get('probe')).rejects.toThrow();
  });

  it('never closes a client you pass', async () => {
    const client = new Etcd3({ hosts: cluster.hosts() });
    const e = engine(new EtcdLockBackend({ client, sessionTtl: 2_000 }));
    await (await e.acquire(key())).release();
    await e.close();
    await expect(client.put('still-open').value('yes')).resolves.toBeDefined();
    client.close();
  });

  it('a factory that throws: a try-once fails as unavailable; the factory is asked again next time', async () => {
    let calls = 0;
    const e = engine(
      new EtcdLockBackend({
        sessionTtl: 2_000,
        clientFactory: () => {
          calls++;
          if (calls === 1) throw new Error('config not ready');
          return new Etcd3({ hosts: cluster.hosts() });
        },
      }),
    );
    await expect(e.acquire(key(), { wait: 0 })).rejects.toMatchObject({
      name: 'LockBackendUnavailableError',
    });
    const h = await e.acquire(key());
    expect(calls).toBe(2);
    await h.release();
  });

  it('a factory that returns something else fails naming clientFactory; client and clientFactory together are refused', async () => {
    const e = engine(new EtcdLockBackend({ clientFactory: () => ({ not: 'a client' }) }));
    await expect(e.acquire(key())).rejects.toMatchObject({
      name: 'InvalidLockOptionsError',
      option: 'clientFactory',
    });
    const client = new Etcd3({ hosts: cluster.hosts() });
    expect(() => new EtcdLockBackend({ client, clientFactory: () => client })).toThrow(
      expect.objectContaining({ name: 'InvalidLockOptionsError' }),
    );
    expect(() => new EtcdLockBackend({ clientFactory: 'etcd' as never })).toThrow(
      expect.objectContaining({ option: 'clientFactory' }),
    );
    client.close();
  });
});
