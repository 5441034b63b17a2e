/**
 * One campaigner for the multi-process election test. argv: redisPort ttl. Reports over IPC:
 * { type: 'leader', token } on every win, { type: 'follower' } on every loss, and answers
 * { type: 'status' } with { type: 'status', leader } (read synchronously: a paused leader that
 * resumes past its validity answers false).
 */
import Redis from 'ioredis';
import { LockEngine, RedisLockBackend } from '../../lib';

const [port, ttl] = process.argv.slice(2);
const client = new Redis({ port: Number(port), host: '127.0.0.1', maxRetriesPerRequest: 1 });
const engine = new LockEngine({
  backend: new RedisLockBackend({ client }),
  keyPrefix: 'election-test:',
  defaults: { ttl: Number(ttl) },
});
const leadership = engine.leadership('fleet');
leadership.onChange((leader, term) =>
  process.send?.(
    leader ? { type: 'leader', token: String(term?.fencingToken) } : { type: 'follower' },
  ),
);
process.on('message', (m: { type: string }) => {
  if (m.type === 'status') process.send?.({ type: 'status', leader: leadership.isLeader });
});
process.send?.({ type: 'ready' });
