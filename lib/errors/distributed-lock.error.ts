/** Stable machine-readable codes of every error this package throws. */
export type DistributedLockErrorCode =
  | 'LOCK_ACQUIRE_TIMEOUT'
  | 'LOCK_LOST'
  | 'LOCK_NOT_HELD'
  | 'LOCK_BACKEND_UNAVAILABLE'
  | 'INVALID_LOCK_OPTIONS'
  | 'LOCK_KEY_RESOLUTION'
  | 'LOCK_MODULE_MISSING'
  | 'REQUEST_ABORTED'
  | 'STALE_FENCING_TOKEN'
  | 'FENCING_TOKEN_MISSING';

/**
 * Base of every error of this package. Carries a stable `code`, the lock `key` involved (when there
 * is one) and the driver's error as `cause`. Deliberately not an HttpException: the HTTP mapping
 * lives in LockedInterceptor and can be replaced.
 */
export class DistributedLockError extends Error {
  readonly code: DistributedLockErrorCode;
  readonly key: string | undefined;

  constructor(
    code: DistributedLockErrorCode,
    message: string,
    options: { key?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.key = options.key;
  }
}
