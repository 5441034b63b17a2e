/**
 * Lua scripts of the Redis backend. The lock's key layout and the scripts Redlock shares live in
 * ../redis-client (lock-keys.ts, lock.scripts.ts); `lockKeys` is re-exported here for tests and tools.
 */
export { lockKeys, ACQUIRE, RELEASE, RENEW, type LockKeys } from '../redis-client';
export type { RedisScript } from '../redis-client';
