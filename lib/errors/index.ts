export { DistributedLockError } from './distributed-lock.error';
export type { DistributedLockErrorCode } from './distributed-lock.error';
export { LockAcquireTimeoutError } from './lock-acquire-timeout.error';
export { LockLostError } from './lock-lost.error';
export { LockNotHeldError } from './lock-not-held.error';
export { LockBackendUnavailableError } from './lock-backend-unavailable.error';
export { InvalidLockOptionsError } from './invalid-lock-options.error';
export { LockKeyResolutionError } from './lock-key-resolution.error';
