import { randomBytes } from 'node:crypto';
import { EtcdLockBackend, encodeEtcdLockName } from '../../lib/backends/etcd';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../lib/errors/lock-backend-unavailable.error';
import { eventually } from '../support/eventually';
import { freePort } from '../support/server-process';
import { etcdFixture } from './etcd-fixture';

/**
 * Bad input to the etcd backend: options, names that could reach another lock's prefix, empty
 * names, and a client that cannot connect. Each gets a clear error and locks nothing.
 */
describe('etcd backend: bad input', () => {
  const etcd = etcdFixture();
  const client = etcd.client;

  function engine(hosts?: string[]) {
    const backend = new EtcdLockBackend({ client: client(hosts), sessionTtl: 2_000 });
    return { engine: etcd.engine(backend, { ttl: 2_000, wait: 2_000 }), backend };
  }
  const id = () => randomBytes(4).toString('hex');

  it('rejects a session TTL below 2 s or not in whole seconds, naming the option and what is allowed', () => {
    for (const sessionTtl of [
      1_000,
      1_999,
      0,
      -2_000,
      2_500,
      3_000.5,
      Number.NaN,
      Infinity,
      '3000',
      null,
    ]) {
      const make = () =>
        new EtcdLockBackend({ client: client(), sessionTtl: sessionTtl as number });
      expect(make).toThrow(InvalidLockOptionsError);
      expect(make).toThrow(/"sessionTtl".*whole seconds in ms, at least 2000/);
    }
    expect(new EtcdLockBackend({ client: client(), sessionTtl: 2_000 }).sessionTtl).toBe(2_000);
    expect(new EtcdLockBackend({ client: client() }).sessionTtl).toBe(10_000);
  });

  it('rejects a missing or wrong client, a namespaced client, unknown options and bad prefixes', () => {
    for (const bad of [undefined, null, {}, 'http://127.0.0.1:2379', { kv: {} }]) {
      expect(() => new EtcdLockBackend({ client: bad })).toThrow(
        expect.objectContaining({ option: 'client' }),
      );
    }
    expect(() => new EtcdLockBackend({ client: client().namespace('app/') })).toThrow(
      /without a namespace/,
    );
    expect(() => new EtcdLockBackend({ client: client(), ttl: 5 } as never)).toThrow(
      expect.objectContaining({ option: 'ttl' }),
    );
    expect(() => new EtcdLockBackend({ client: client(), prefix: 'bad\nprefix' })).toThrow(
      expect.objectContaining({ option: 'prefix' }),
    );
    expect(() => new EtcdLockBackend({ client: client(), callTimeout: 0 })).toThrow(
      expect.objectContaining({ option: 'callTimeout' }),
    );
    expect(() => new EtcdLockBackend(undefined as never)).toThrow(InvalidLockOptionsError);
  });

  it('an empty name or an unknown mode is rejected by the backend itself, and leaves no key', async () => {
    const backend = new EtcdLockBackend({ client: client(), sessionTtl: 2_000 });
    const base = {
      owner: id(),
      ttl: 2_000,
      wait: 0,
      signal: new AbortController().signal,
      onLost: () => undefined,
    };
    await expect(backend.tryAcquire({ ...base, key: '', mode: 'exclusive' })).rejects.toMatchObject(
      {
        name: 'InvalidLockOptionsError',
        option: 'key',
      },
    );
    await expect(
      backend.tryAcquire({ ...base, key: 'x', mode: 'upgradable' as never }),
    ).rejects.toMatchObject({ option: 'mode' });
    expect(await etcd.admin.getAll().prefix('/').keys()).toEqual([]);
    await backend.close();
  });

  it('a lock named `a` never sees the keys of `a/b`: ours are encoded, a foreign `a/b` lock is not a contender', async () => {
    const a = `nest:${id()}`;
    const { engine: e1 } = engine();
    const { engine: e2 } = engine();
    const child = await e1.acquire(`${a}/b`);
    // `/` (and `%`) are encoded: the child lock lives under `a%2Fb/`, outside `a/`.
    expect(await etcd.admin.getAll().prefix(`${a}/`).keys()).toEqual([]);
    expect(
      await etcd.admin
        .getAll()
        .prefix(`${encodeEtcdLockName(`${a}/b`)}/`)
        .keys(),
    ).toHaveLength(1);
    const parent = await e2.acquire(a, { wait: 0 });
    // etcdctl (Go) does not encode: its lock `a/b` puts `a/b/<lease>` inside our range; we skip it.
    const lease = etcd.admin.lease(10);
    const session = await lease.grant();
    await etcd.admin.put(`${a}/b/${BigInt(session).toString(16)}`).value('');
    await parent.release();
    const again = await e2.acquire(a, { wait: 0 });
    expect(again.fencingToken > parent.fencingToken).toBe(true);
    // And two names differing only by an encoded form stay different locks.
    const literal = await e2.acquire(`${a}%2Fb`, { wait: 0 });
    expect(literal.key).not.toBe(child.key);
    await Promise.all([child.release(), again.release(), literal.release()]);
    await etcd.admin.delete().prefix(`${a}/b/`);
    // Revoked, or etcd3 keeps it alive (and retrying once the server stops) after the run.
    await lease.revoke();
  });

  it('a client that cannot connect: LockBackendUnavailableError naming the session, within the wait budget, nothing held', async () => {
    const port = await freePort();
    const { engine: e } = engine([`http://127.0.0.1:${port}`]);
    const started = Date.now();
    const error = await e.acquire(`nowhere:${id()}`, { wait: 500 }).catch((err: unknown) => err);
    console.log(`etcd bad input: unreachable etcd reported in ${Date.now() - started} ms`);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as Error).message).toMatch(/could not create an etcd session lease/);
    expect(error).toMatchObject({ key: expect.stringMatching(/^nowhere:/) });
    expect(e.heldCount).toBe(0);
    // The backend is not stuck: pointed at a live server by the user, a new backend works at once.
    const { engine: ok } = engine();
    const h = await eventually(() => ok.acquire(`somewhere:${id()}`, { wait: 1_000 }));
    await h.release();
  });
});
