/**
 * `nestjs-distributed-lock/integration`: for wiring and typing the Nest layer by hand. The
 * exception filter and the interceptors to bind yourself, the answers for a filter of your own
 * and the error-mapping types, the module options token, the types behind `@Locked`'s signature
 * (to compose your own decorator over it), the defaults and limits, and the structural client
 * types the backends accept.
 */

// Lock errors on every transport
export { LockExceptionFilter } from '../filters/lock-exception.filter';
export { lockErrorResponse } from '../filters/lock-error.mapper';
export { LockedInterceptor, toHttpException } from '../interceptors/locked.interceptor';
export { RequestLifecycleInterceptor } from '../interceptors/request-lifecycle.interceptor';
export type {
  LockErrorMapper,
  LockErrorMappingOptions,
  LockErrorResponse,
  LockHttpErrorMapper,
  LockTransport,
} from '../interfaces/distributed-lock-module-options.interface';

// The module and the decorator
export { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
export type { LockedMethodDecorator, LockedResult } from '../decorators/locked.decorator';
export {
  DEFAULT_TTL_MS,
  DEFAULT_WAIT_MS,
  DEFAULT_KEY_PREFIX,
  DEFAULT_OPERATION_TIMEOUT_MS,
  MAX_KEY_LENGTH,
  MIN_TTL_MS,
} from '../distributed-lock.constants';

// The clients the backends accept, typed structurally (no driver types)
export type { EtcdClientLike } from '../backends/etcd';
export type { ZooKeeperClientLike, ZooKeeperClientInput } from '../backends/zookeeper';
export type { MySqlPoolLike } from '../backends/mysql';
export type { PgPoolLike } from '../backends/postgres';
