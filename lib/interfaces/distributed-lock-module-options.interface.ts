import type { ExecutionContext } from '@nestjs/common';
import type { LockEngineOptions } from '../core/lock-engine';
import type { DistributedLockError } from '../errors/distributed-lock.error';
import type { LockObservabilityOptions } from './observability-options.interface';

/**
 * Maps a lock error of an HTTP handler to what the client sees. Return an exception to throw
 * (e.g. an HttpException), or undefined to use the default mapping.
 */
export type LockHttpErrorMapper = (error: DistributedLockError, context: ExecutionContext) => unknown;

export interface DistributedLockModuleOptions extends LockEngineOptions, LockObservabilityOptions {
  /**
   * HTTP mapping of lock errors in LockedInterceptor: true (default) maps busy/timeout and lost to
   * 409 (with Retry-After), unresolvable keys to 400 and backend outages to 503; false leaves errors
   * as they are (for your own exception filter); a function overrides per error.
   */
  httpErrors?: boolean | LockHttpErrorMapper;
}
