import { Logger } from '@nestjs/common';
import { MemoryLockBackend, RedisLockBackend, type LockBackend } from '../lib';

/**
 * Picks the lock backend from the environment: LOCK_BACKEND=memory (default, no setup) or
 * LOCK_BACKEND=redis with REDIS_URL (required: without it every lock fails, as the start-up check
 * says). The driver is loaded only
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
    const url = env.REDIS_URL;
    if (url === undefined) {
      // Like the README's quick start (config.getOrThrow): the backend's lazy clientFactory throws,
      // and the start-up check says so, naming the backend and the cause.
      logger.warn('redis backend without REDIS_URL: set REDIS_URL=redis://host:port');
      const backend = new RedisLockBackend({
        clientFactory: () => {
          throw new Error('REDIS_URL is not set (LOCK_BACKEND=redis needs REDIS_URL=redis://...)');
        },
      });
      return { backend, close: async () => undefined };
    }
    const Redis = require('ioredis') as typeof import('ioredis').default;
    const client = new Redis(url, { maxRetriesPerRequest: 2 });
    logger.log(`redis backend at ${url}`);
    return {
      backend: new RedisLockBackend({ client }),
      close: async () => void client.disconnect(),
    };
  }
  throw new Error(`LOCK_BACKEND=${kind} is not supported by the sample app (memory or redis)`);
}
