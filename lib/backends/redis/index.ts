export { RedisLockBackend } from './redis.backend';
export type { RedisLockBackendOptions } from './redis.options';
export type { RedisClientLike } from '../redis-client';
