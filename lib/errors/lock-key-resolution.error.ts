import { DistributedLockError } from './distributed-lock.error';

/** The key template could not be resolved from the call's arguments; nothing was locked. */
export class LockKeyResolutionError extends DistributedLockError {
  readonly template: string;

  constructor(template: string, message: string) {
    super('LOCK_KEY_RESOLUTION', `Cannot resolve lock key "${template}": ${message}`, {
      key: template,
    });
    this.template = template;
  }
}
