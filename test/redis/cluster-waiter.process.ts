/**
 * A waiter in its own OS process on a Redis Cluster (the test SIGKILLs it while it is queued).
 * argv: the nodes' ports as a comma-separated list, the key prefix, the key, and optionally the
 * semaphore's permits. Reports `ready` once
 * its client knows the slots, then waits for the key (60 s) and reports `granted` if it ever is.
 */
import { Cluster } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { runHolder } from '../support/holder-harness';

runHolder(async (channel) => {
  const [ports, keyPrefix, key, permits] = process.argv.slice(2);
  const client = new Cluster(
    ports.split(',').map((port) => ({ host: '127.0.0.1', port: Number(port) })),
  );
  client.on('error', () => undefined);
  await client.ping();
  const engine = new LockEngine({ backend: new RedisLockBackend({ client }), keyPrefix });
  channel.send({ type: 'ready' });
  const handle = await engine.acquire(key, {
    wait: 60_000,
    ttl: 30_000,
    permits: permits ? Number(permits) : undefined,
  });
  channel.send({ type: 'granted', token: String(handle.fencingToken) });
});
