/**
 * What the Redis and Redlock backends share: structural client types, scripts run by EVALSHA with
 * a NOSCRIPT fallback (one call or a pipelined batch), the lazily made pub/sub connection, where a
 * client comes from (given or made and closed by the backend), and the lock's key layout + scripts.
 */
export type {
  RedisClientLike,
  RedisNodeLike,
  RedisPipelineLike,
  RedisReply,
  RedisSubscriberLike,
} from './redis-client.types';
export { REDIS_CLIENT_METHODS } from './redis-client.types';
export {
  redisScript,
  runScript,
  runScriptBatch,
  runScriptThen,
  type RedisScript,
} from './redis.script';
export { runScriptThenWait } from './redis.script-acked';
export { RedisSubscriber } from './redis.subscriber';
export { keySlot as clusterSlot } from '../../backend-kit/cluster-slot';
export { PubSubWakeups } from './pubsub.wakeups';
export {
  RedisClientSource,
  checkRedisClient,
  quietErrors,
  quit,
  stopSlotRefresh,
} from './redis-client.source';
export { RedisConnectionDownError } from './connection-state';
export { everyLockKey, lockKeys, recentKeys, type LockKeys } from './lock-keys';
export {
  parseInspect,
  storedHolders,
  toInspection,
  withIdentities,
  type ServerLockView,
} from './lock.inspection';
export {
  ACQUIRE,
  FENCE_LUA,
  FORCE_RELEASE,
  HOLDERS,
  INSPECT,
  NOW_MS_LUA,
  RELEASE,
  RENEW,
  UNMARK,
} from './lock.scripts';
export {
  heldOn,
  holderOf,
  listHeldKeys,
  scanCandidates,
  scanNodes,
  type RedisScanLike,
} from './key-scan';
