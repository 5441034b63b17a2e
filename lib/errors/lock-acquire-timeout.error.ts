import { DistributedLockError } from './distributed-lock.error';

/** The lock stayed held by another owner until the `wait` deadline (or `wait: 0` found it busy). */
export class LockAcquireTimeoutError extends DistributedLockError {
  /** Milliseconds after which the lock is expected to be free, when the backend can tell. */
  readonly retryAfter: number | undefined;
  readonly wait: number;

  constructor(key: string, wait: number, retryAfter?: number, cause?: unknown) {
    super(
      'LOCK_ACQUIRE_TIMEOUT',
      wait === 0
        ? `Lock "${key}" is held by another owner (wait: 0, tried once)`
        : `Lock "${key}" is still held by another owner after waiting ${wait} ms (option "wait")`,
      { key, cause },
    );
    this.wait = wait;
    this.retryAfter = retryAfter;
  }
}
