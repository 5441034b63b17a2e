/**
 * One campaigner for the ZooKeeper election failover test. argv: connectionString sessionTimeout ttl
 * (the connection string is the campaigner's own TcpProxy, so the test can partition it alone).
 * Reports over IPC: { type: 'leader', token } on every win, { type: 'follower' } on every loss, and
 * answers { type: 'status' } with { type: 'status', leader } (read synchronously: a paused leader
 * that resumes past its validity answers false).
 */
import { ZooKeeperLockBackend } from '../../lib/backends/zookeeper/zookeeper.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { newZkClient } from '../support/zookeeper-server';

const [connectionString, sessionTimeout, ttl] = process.argv.slice(2);
const engine = new LockEngine({
  backend: new ZooKeeperLockBackend({
    clientFactory: () => newZkClient(connectionString, Number(sessionTimeout)),
    sessionTimeout: Number(sessionTimeout),
  }),
  keyPrefix: 'election-test:',
  defaults: { ttl: Number(ttl) },
});
const leadership = engine.leadership('fleet', { proposal: `campaigner-${process.pid}` });
leadership.onChange((leader, term) =>
  process.send?.(
    leader ? { type: 'leader', token: String(term?.fencingToken) } : { type: 'follower' },
  ),
);
process.on('message', (m: { type: string }) => {
  if (m.type === 'status') process.send?.({ type: 'status', leader: leadership.isLeader });
});
process.send?.({ type: 'ready' });
