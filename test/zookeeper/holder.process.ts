/**
 * A separate process that takes one ZooKeeper lock and keeps it, for the SIGKILL / SIGSTOP faults
 * (started with test/support/holder-harness.ts). Arguments: connectionString, key,
 * sessionTimeout ms. Reports `held` (token) once it holds the lock, later `lost` (reason) if its
 * handle's signal aborts.
 */
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { runHolder } from '../support/holder-harness';
import { newZkClient } from '../support/zookeeper-server';

const [connectionString, key, sessionTimeout] = process.argv.slice(2);

runHolder(async ({ send }) => {
  // A long ttl: what is under test is the session, not the watchdog.
  const engine = new LockEngine({
    backend: new ZooKeeperLockBackend({
      clientFactory: () => newZkClient(connectionString, Number(sessionTimeout)),
    }),
    defaults: { ttl: 120_000 },
  });
  const h = await engine.acquire(key, { wait: 30_000 });
  h.signal.addEventListener('abort', () =>
    send({ type: 'lost', reason: (h.signal.reason as Error).message }),
  );
  send({ type: 'held', token: h.fencingToken.toString() });
});
