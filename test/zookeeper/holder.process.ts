/**
 * A separate process that takes one ZooKeeper lock and keeps it (for SIGKILL / SIGSTOP faults).
 * Usage: node -r ts-node/register/transpile-only holder.process.ts <connectionString> <key> <sessionTimeoutMs>
 * Prints "held <fencing token>", later "lost <reason>" if its handle's signal aborts.
 */
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { newZkClient } from '../support/zookeeper-server';

const [connectionString, key, sessionTimeout] = process.argv.slice(2);
// A long ttl: what is under test is the session, not the watchdog.
const engine = new LockEngine({
  backend: new ZooKeeperLockBackend({
    clientFactory: () => newZkClient(connectionString, Number(sessionTimeout)),
  }),
  defaults: { ttl: 120_000 },
});
engine.acquire(key, { wait: 30_000 }).then(
  (h) => {
    process.stdout.write(`held ${h.fencingToken}\n`);
    h.signal.addEventListener('abort', () =>
      process.stdout.write(`lost ${(h.signal.reason as Error).message}\n`),
    );
  },
  (error: Error) => {
    process.stdout.write(`error ${error.message}\n`);
    process.exit(1);
  },
);
setInterval(() => undefined, 1 << 30);
