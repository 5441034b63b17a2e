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
} from './sql-fenced.statements';
export type { FencedUpdateSpec, SqlDialect } from './sql-fenced.statements';
export { MemoryFenceStore } from './memory-fence.store';
export type { FenceStore } from './fence-store.interface';
export { fencedValue, toFencingToken } from './fencing-token';
export type {
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
} from './fencing-carrier';
export type { FencingCarrier, FencingSource } from './fencing-carrier';
export { Fenced } from './fenced.decorator';
export { FencedGuard, FENCE_STORE } from './fenced.guard';
export type { FencedOptions } from './fenced.guard';
export { DistributedLockFencingModule } from './fencing.module';
export type { DistributedLockFencingOptions } from './fencing.module';
