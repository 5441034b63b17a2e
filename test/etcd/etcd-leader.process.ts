/**
 * One campaigner of the etcd failover spec. argv: etcd host (its own proxy), sessionTtl ms.
 * Reports over IPC { type: 'leader', token } on every win and { type: 'follower' } on every loss,
 * and answers { type: 'status' } with { type: 'status', leader } (read synchronously from the
 * term's local validity: a paused or partitioned leader past its validity answers false).
 */
import { Etcd3 } from 'etcd3';
import { EtcdLockBackend } from '../../lib/backends/etcd';
import { LockEngine } from '../../lib/core/lock-engine';

const [host, sessionTtl] = process.argv.slice(2);
const client = new Etcd3({ hosts: [host] });
const engine = new LockEngine({
  backend: new EtcdLockBackend({ client, sessionTtl: Number(sessionTtl), callTimeout: 1_000 }),
  keyPrefix: 'failover:',
  defaults: { ttl: Number(sessionTtl) },
});
const leadership = engine.leadership('fleet', { proposal: `pid-${process.pid}` });
leadership.onChange((leader, term) =>
  process.send?.(
    leader ? { type: 'leader', token: String(term?.fencingToken) } : { type: 'follower' },
  ),
);
process.on('message', (m: { type: string }) => {
  if (m.type === 'status') process.send?.({ type: 'status', leader: leadership.isLeader });
});
process.send?.({ type: 'ready' });
