import { Cluster } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';

/** Option errors show the value the caller passed, not `object Object`. */
describe('RedisLockBackend option messages', () => {
  it('shows an object value it refuses as its keys and values', async () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true });
    try {
      let error: unknown;
      try {
        new RedisLockBackend({
          client: cluster,
          notifications: { count: 1, timeout: 100 } as unknown as boolean,
        });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidLockOptionsError);
      const message = (error as Error).message;
      expect(message).toContain('"notifications": got { count: 1, timeout: 100 }');
      expect(message).not.toContain('object Object');
    } finally {
      cluster.disconnect();
    }
  });
});
