/**
 * The public API of nestjs-distributed-lock. Backend authors import
 * `nestjs-distributed-lock/backend-kit` instead; nothing here is internal.
 */

// Nest layer: module, decorators, service, interceptor
export { DistributedLockModule } from './distributed-lock.module';
export { DISTRIBUTED_LOCK_MODULE_OPTIONS } from './distributed-lock.module-definition';
export { Locked } from './decorators/locked.decorator';
export { KeyParam } from './decorators/key-param.decorator';
export { CurrentLock } from './decorators/current-lock.decorator';
export { LockedJob } from './decorators/locked-job.decorator';
export type { LockedJobOptions } from './decorators/locked-job.decorator';
export { LeaderOnly } from './decorators/leader-only.decorator';
export { Leadership } from './recipes/election';
export type { CampaignOptions, LeadershipListener } from './recipes/election';
export { LockedInterceptor, toHttpException } from './interceptors/locked.interceptor';
export type { LockedMethodDecorator, LockedResult } from './decorators/locked.decorator';
export { LockService } from './services/lock.service';

// Errors per transport, the request's lifecycle, testing
export { LockExceptionFilter } from './filters/lock-exception.filter';
export { lockErrorResponse } from './filters/lock-error.mapper';
export { RequestLifecycleInterceptor } from './interceptors/request-lifecycle.interceptor';
export { LockTesting, LockTestingHelper } from './testing';
export type { LockTestingApp } from './testing';

// Handles, keys and the framework-free engine (for scripts and workers without Nest)
export { LockHandle } from './core/lease/lock-handle';
export { LockEngine } from './core/lock-engine';
export type { LockEngineOptions } from './core/lock-engine';
export { encodeKeyPart } from './backend-kit/key-encoding';
export type { LockKey, LockKeyFn } from './core/keys/lock-key';
export {
  DEFAULT_TTL_MS,
  DEFAULT_WAIT_MS,
  DEFAULT_KEY_PREFIX,
  DEFAULT_OPERATION_TIMEOUT_MS,
  MAX_KEY_LENGTH,
  MIN_TTL_MS,
} from './distributed-lock.constants';

// Operations: events, logs, OpenTelemetry, health, inspection, live view
export { LOCK_EVENT_TYPES, keyShape } from './core/activity/lock-events';
export type {
  LockEvent,
  LockEventType,
  LockEventListener,
  LockAcquiredEvent,
  LockBusyEvent,
  LockSkippedEvent,
  LockAcquireFailedEvent,
  LockReleasedEvent,
  LockLostEvent,
  LockRenewFailedEvent,
  LockReleaseFailedEvent,
  LockReleaseRetriedEvent,
  LockBackendUnavailableEvent,
  LockBackendRecoveredEvent,
  LockForceReleasedEvent,
} from './core/activity/lock-events';
export type { HeldLockInfo, WaitingLockInfo } from './core/activity/lock-activity';
export type { LockInspectionReport, BackendProbeResult } from './core/activity/lock-operations';
export type { LockInspection, LockHolderInfo } from './interfaces/lock-backend.interface';
export { LOCK_METRICS, LOCK_SPANS } from './observability/lock-telemetry';
export type { LockTelemetryOptions } from './observability/lock-telemetry';
export { lockEventName } from './observability/event-emitter.bridge';
export type { LockLogLevel } from './observability/lock-logger';
export type { LockObservabilityOptions } from './interfaces/observability-options.interface';
export { DistributedLockHealthIndicator } from './health/lock-health.indicator';
export type { LockHealthResult } from './health/lock-health.indicator';
export { DistributedLockLiveViewModule } from './live-view/live-view.module';
export type { DistributedLockLiveViewOptions } from './live-view/live-view.module';

// Options
export type {
  DistributedLockModuleOptions,
  LockErrorMapper,
  LockErrorMappingOptions,
  LockErrorResponse,
  LockHttpErrorMapper,
  LockTransport,
} from './interfaces/distributed-lock-module-options.interface';
export type {
  LockOptions,
  LockedOptions,
  LockDefaults,
  LockOnBusy,
} from './interfaces/lock-options.interface';
export type {
  LockBackend,
  LockBackendCapabilities,
  LockMode,
} from './interfaces/lock-backend.interface';

// Fenced resources: the storage side of fencing tokens (Redis, SQL, between services)
export * from './fencing';

// Errors
export * from './errors';

// Backends (none of them loads a driver: you pass your own client)
export { MemoryLockBackend } from './backends/memory/memory.backend';
export type { MemoryLockBackendOptions } from './backends/memory/memory.backend';
export { RedisLockBackend } from './backends/redis';
export type { RedisLockBackendOptions } from './backends/redis';
export { RedlockBackend } from './backends/redlock';
export type { RedlockBackendOptions } from './backends/redlock';
export { EtcdLockBackend, encodeEtcdLockName, etcdLockPrefix } from './backends/etcd';
export type { EtcdLockBackendOptions, EtcdClientLike } from './backends/etcd';
export {
  ZooKeeperLockBackend,
  lockDirectory as zookeeperLockDirectory,
} from './backends/zookeeper';
export type {
  ZooKeeperLockBackendOptions,
  ZooKeeperClientLike,
  ZooKeeperClientInput,
  ZooKeeperLockStats,
  ZooKeeperSessionState,
  CuratorRecipe,
} from './backends/zookeeper';
export { MySqlLockBackend, mysqlDdl } from './backends/mysql';
export type { MySqlLockBackendOptions, MySqlPoolLike } from './backends/mysql';
export { PostgresLockBackend, postgresDdl } from './backends/postgres';
export type { PostgresLockBackendOptions, PgPoolLike } from './backends/postgres';
