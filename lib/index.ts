/**
 * The package root: what an application uses (the module, the decorators, LockService and
 * LockHandle, the framework-free engine, the errors it catches, the options types, the backends).
 * At most 50 names (lib/public-surface.spec.ts counts them); the rest has a subpath of its own:
 * - `nestjs-distributed-lock/fencing`: the storage side of fencing tokens (lib/fencing/index.ts);
 * - `nestjs-distributed-lock/testing`: test helpers (lib/testing/index.ts);
 * - `nestjs-distributed-lock/operations`: events, telemetry, health, live view, inspection and
 *   what each backend stores (lib/operations/index.ts);
 * - `nestjs-distributed-lock/integration`: the Nest layer wired by hand, error answers, defaults,
 *   the client types the backends accept (lib/integration/index.ts);
 * - `nestjs-distributed-lock/backend-kit`: for backend authors (lib/backend-kit/index.ts).
 */

// Module, decorators, service, handle
export { DistributedLockModule } from './distributed-lock.module';
export { Locked } from './decorators/locked.decorator';
export { KeyParam } from './decorators/key-param.decorator';
export { CurrentLock } from './decorators/current-lock.decorator';
export { LockedJob } from './decorators/locked-job.decorator';
export type { LockedJobOptions } from './decorators/locked-job.decorator';
export { LeaderOnly } from './decorators/leader-only.decorator';
export { LockService } from './services/lock.service';
export { LockHandle } from './core/lease/lock-handle';
export { Leadership } from './recipes/election';
export type { CampaignOptions, LeadershipListener } from './recipes/election';

// Keys and the framework-free engine (for scripts and workers without Nest)
export { encodeKeyPart } from './backend-kit/key-encoding';
export type { LockKey, LockKeyFn } from './core/keys/lock-key';
export { LockEngine } from './core/lock-engine';
export type { LockEngineOptions } from './core/lock-engine';

// Options
export type { DistributedLockModuleOptions } from './interfaces/distributed-lock-module-options.interface';
export type {
  LockOptions,
  LockedOptions,
  LockDefaults,
  LockOnBusy,
} from './interfaces/lock-options.interface';
export type { LockBackend, LockMode } from './interfaces/lock-backend.interface';

// Errors (the fencing errors are in `nestjs-distributed-lock/fencing`)
export {
  DistributedLockError,
  LockAcquireTimeoutError,
  LockLostError,
  LockNotHeldError,
  LockBackendUnavailableError,
  InvalidLockOptionsError,
  LockKeyResolutionError,
  LockModuleMissingError,
  RequestAbortedError,
} from './errors';
export type { DistributedLockErrorCode } from './errors';

// Backends (none of them loads a driver: you pass your own client or a factory)
export { MemoryLockBackend } from './backends/memory/memory.backend';
export type { MemoryLockBackendOptions } from './backends/memory/memory.backend';
export { RedisLockBackend } from './backends/redis';
export type { RedisLockBackendOptions } from './backends/redis';
export { RedlockBackend } from './backends/redlock';
export type { RedlockBackendOptions } from './backends/redlock';
export { EtcdLockBackend } from './backends/etcd';
export type { EtcdLockBackendOptions } from './backends/etcd';
export { ZooKeeperLockBackend } from './backends/zookeeper';
export type { ZooKeeperLockBackendOptions } from './backends/zookeeper';
export { MySqlLockBackend } from './backends/mysql';
export type { MySqlLockBackendOptions } from './backends/mysql';
export { PostgresLockBackend } from './backends/postgres';
export type { PostgresLockBackendOptions } from './backends/postgres';
