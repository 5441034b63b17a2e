import { Logger } from '@nestjs/common';
import { MemoryLockBackend, RedisLockBackend, type LockBackend } from '../lib';

/**
 * Picks the lock backend from the environment: LOCK_BACKEND=memory (default, no setup) or
 * LOCK_BACKEND=redis with REDIS_URL (default redis://127.0.0.1:6379). The driver is loaded only
 * when chosen: the package itself never loads one.
 */
export function createLockBackend(env: NodeJS.ProcessEnv = process.env): {
  backend: LockBackend;
  close(): Promise<void>;
} {
  const kind = env.LOCK_BACKEND ?? 'memory';
  const logger = new Logger('LockBackend');
  if (kind === 'memory') {
    logger.log(
      'memory backend (in-process; set LOCK_BACKEND=redis REDIS_URL=redis://... for Redis)',
    );
    return { backend: new MemoryLockBackend(), close: async () => undefined };
  }
  if (kind === 'redis') {
    const Redis = require('ioredis') as typeof import('ioredis').default;
    const url = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const client = new Redis(url, { maxRetriesPerRequest: 2 });
    logger.log(`redis backend at ${url}`);
    return {
      backend: new RedisLockBackend({ client }),
      close: async () => void client.disconnect(),
    };
  }
  throw new Error(`LOCK_BACKEND=${kind} is not supported by the sample app (memory or redis)`);
}
