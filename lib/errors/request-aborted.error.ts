import { DistributedLockError } from './distributed-lock.error';

/**
 * The request whose handler waited for a lock ended first (its client closed the connection): the
 * wait stopped, nothing was locked and the handler did not run. Nobody is left to answer.
 */
export class RequestAbortedError extends DistributedLockError {
  constructor() {
    super(
      'REQUEST_ABORTED',
      'The client closed the connection while its request waited for a lock',
    );
  }
}
