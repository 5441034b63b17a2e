import { DistributedLockError } from './distributed-lock.error';

/** A held lock was lost: it expired, was deleted behind the holder's back, or its session ended. */
export class LockLostError extends DistributedLockError {
  constructor(key: string, reason: string, cause?: unknown) {
    super('LOCK_LOST', `Lock "${key}" was lost: ${reason}`, { key, cause });
  }
}
