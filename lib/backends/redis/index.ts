export { RedisLockBackend } from './redis.backend';
export type { RedisLockBackendOptions, RedisClientLike } from './redis.backend';
