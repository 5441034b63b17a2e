/**
 * `nestjs-distributed-lock/operations`: watching and running locks in production. Lock events
 * (`LockService.events`, the `onEvent` option, @nestjs/event-emitter), logs and OpenTelemetry,
 * the Terminus health indicator, the live view, inspection, and what each backend stores where
 * operators and other clients see it (the SQL tables' DDL, etcd lock names, ZooKeeper directories
 * and Curator recipes, ZooKeeper session state).
 */

// Lock events
export { LOCK_EVENT_TYPES, keyShape } from '../core/activity/lock-events';
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
} from '../core/activity/lock-events';
export { lockEventName } from '../observability/event-emitter.bridge';

// Logs and OpenTelemetry
export type { LockLogLevel } from '../observability/lock-logger';
export type { LockObservabilityOptions } from '../interfaces/observability-options.interface';
export { LOCK_METRICS, LOCK_SPANS } from '../observability/lock-telemetry';
export type { LockTelemetryOptions } from '../observability/lock-telemetry';

// Health, inspection, the live view
export { DistributedLockHealthIndicator } from '../health/lock-health.indicator';
export type { LockHealthResult } from '../health/lock-health.indicator';
export type { HeldLockInfo, WaitingLockInfo } from '../core/activity/lock-activity';
export type { LockInspectionReport, BackendProbeResult } from '../core/activity/lock-operations';
export type { LockInspection, LockHolderInfo } from '../interfaces/lock-backend.interface';
export { DistributedLockLiveViewModule } from '../live-view/live-view.module';
export type { DistributedLockLiveViewOptions } from '../live-view/live-view.module';

// What the backends store: tables, names other clients share, session state
export { mysqlDdl } from '../backends/mysql';
export { postgresDdl } from '../backends/postgres';
export { encodeEtcdLockName, etcdLockPrefix } from '../backends/etcd';
export { lockDirectory as zookeeperLockDirectory } from '../backends/zookeeper';
export type {
  CuratorRecipe,
  ZooKeeperLockStats,
  ZooKeeperSessionState,
} from '../backends/zookeeper';
