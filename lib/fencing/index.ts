/**
 * `nestjs-distributed-lock/fencing`: the storage side of fencing tokens. Stores that refuse a write
 * with a stale token (Redis, PostgreSQL, MySQL, memory), the token carried between services
 * (`fencingHeaders`, `@Fenced`, DistributedLockFencingModule), and the two errors a stale or
 * missing token raises.
 */
export { StaleFencingTokenError, FencingTokenMissingError } from '../errors';
export { RedisFencedStore } from './redis-fenced.store';
export type {
  RedisFencedStoreOptions,
  RedisFencedClientLike,
  RedisFencedScript,
} from './redis-fenced.store';
export { keySlot, hashTag, fenceKeyFor, crc16, CLUSTER_SLOTS } from './redis-slot';
export { SqlFencedStore } from './sql-fenced.store';
export type { SqlFencedStoreOptions } from './sql-fenced.store';
export { PostgresFencedStore } from './postgres-fenced.store';
export type {
  PostgresFencedStoreOptions,
  PgPoolLike,
  PgQueryableLike,
} from './postgres-fenced.store';
export { MySqlFencedStore } from './mysql-fenced.store';
export type { MySqlFencedStoreOptions, MySqlQueryableLike } from './mysql-fenced.store';
export {
  fenceTableDdl,
  fenceColumnDdl,
  DEFAULT_FENCE_TABLE,
  DEFAULT_FENCE_COLUMN,
} from './sql-fenced.schema';
export type { SqlDialect } from './sql-fenced.schema';
export type { FencedUpdateSpec } from './sql-fenced.statements';
export { MemoryFenceStore, DEFAULT_MEMORY_FENCE_RESOURCES } from './memory-fence.store';
export type { MemoryFenceStoreOptions } from './memory-fence.store';
export { DEFAULT_FENCE_TIMEOUT_MS } from './fence-timeout';
export type { FenceStore } from './fence-store.interface';
export {
  fencedValue,
  toFencingToken,
  toFencingGrant,
  fencingGrant,
  MAX_FENCING_TOKEN,
} from './fencing-token';
export type {
  FencingGrant,
  FencingHandleLike,
  FencedResult,
  FencedAccepted,
  FencedRefused,
  FencingTokenLike,
} from './fencing-token';
export { FencingEvents, fencingEvents } from './fencing-events';
export type {
  StaleFencingEvent,
  StaleFencingListener,
  FenceObserverOptions,
} from './fencing-events';
export {
  FENCING_HEADER,
  FENCING_FIELD,
  fencingHeaders,
  withFencing,
  formatFencing,
  parseFencing,
  verifyFencing,
} from './fencing-carrier';
export type { FencingCarrier, FencingSource, FencingSignOptions } from './fencing-carrier';
export { Fenced } from './fenced.decorator';
export {
  FencedInterceptor,
  FENCE_STORE,
  DEFAULT_FENCED_MAX_KEY_LENGTH,
} from './fenced.interceptor';
export type { FencedOptions, FencingSecret } from './fenced.interceptor';
export { DistributedLockFencingModule } from './fencing.module';
export type { DistributedLockFencingOptions } from './fencing.module';
