import { DistributedLockError } from './distributed-lock.error';

/**
 * A @Locked method ran where no lock engine can serve it: no DistributedLockModule exists in this
 * process, or several do and the instance was not created by Nest. The message names the method
 * and the fix.
 */
export class LockModuleMissingError extends DistributedLockError {
  /** `Class.method()` of the @Locked method that was called. */
  readonly method: string;

  constructor(method: string, message: string) {
    super('LOCK_MODULE_MISSING', message);
    this.method = method;
  }
}
