import { DistributedLockError } from './distributed-lock.error';

/** extend() on a handle that was released (or never granted). */
export class LockNotHeldError extends DistributedLockError {
  constructor(key: string, action: string) {
    super(
      'LOCK_NOT_HELD',
      `Cannot ${action} lock "${key}": it is not held by this handle (released already)`,
      { key },
    );
  }
}
