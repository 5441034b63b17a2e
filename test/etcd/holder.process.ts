/**
 * A separate holder process for the etcd fault tests (started with test/support/holder-harness.ts):
 * it acquires one lock through the real backend and reports, in order, what happens to it:
 * `acquired` (token, lease), each watchdog renewal (`renew`: whether the handle's signal had already
 * aborted when the backend had decided, i.e. before any request could go out; `renew-result`) and
 * `lost`. Arguments: hosts (comma-separated), key, sessionTtl ms, lock ttl ms.
 */
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockHandle } from '../../lib/core/lease/lock-handle';
import type { BackendLock, LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { runHolder } from '../support/holder-harness';

const [hosts, key, sessionTtl, ttl] = process.argv.slice(2);

runHolder(async ({ send }) => {
  const client = new Etcd3({ hosts: hosts.split(',') });
  const inner = new EtcdLockBackend({ client, sessionTtl: Number(sessionTtl) });
  // eslint-disable-next-line prefer-const -- read by the renew wrapper before it is assigned
  let handle: LockHandle | undefined;
  const backend: LockBackend = {
    name: inner.name,
    capabilities: inner.capabilities,
    tryAcquire: (request) => inner.tryAcquire(request),
    leave: (request) => inner.leave(request),
    waitPolicy: inner.waitPolicy,
    release: (lock) => inner.release(lock),
    close: () => inner.close(),
    renew: (locks: readonly BackendLock[]) => {
      const result = inner.renew(locks);
      send({
        type: 'renew',
        keys: locks.map((l) => l.key),
        abortedBeforeRequest: handle?.signal.aborted ?? false,
      });
      result.then(
        (r) => send({ type: 'renew-result', result: r }),
        (e) => send({ type: 'renew-result', error: String(e) }),
      );
      return result;
    },
  };
  const engine = new LockEngine({
    backend,
    keyPrefix: '',
    defaults: { ttl: Number(ttl), wait: 30_000 },
  });
  handle = await engine.acquire(key);
  const h = handle;
  h.signal.addEventListener('abort', () =>
    send({ type: 'lost', reason: (h.signal.reason as Error).message }),
  );
  send({ type: 'acquired', token: h.fencingToken.toString(), lease: inner.sessionLeaseId });
});
