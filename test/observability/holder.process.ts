/**
 * Another process that holds locks on a Redis: a LockEngine named `instance` (argv: port, instance,
 * then keys) takes each key (ttl 30 s, renewed) and reports 'held'; it releases them and exits when
 * its parent disconnects (or sends 'release').
 */
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';

async function main(): Promise<void> {
  const [port, instance, ...keys] = process.argv.slice(2);
  const client = new Redis({ host: '127.0.0.1', port: Number(port) });
  const engine = new LockEngine({ backend: new RedisLockBackend({ client }), instance });
  const held = await Promise.all(keys.map((key) => engine.acquire(key, { ttl: 30_000 })));
  const done = async () => {
    await Promise.all(held.map((h) => h.release()));
    await engine.close();
    client.disconnect();
  };
  process.once('message', () => void done());
  process.once('disconnect', () => void done());
  process.send?.('held');
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exitCode = 1;
});
