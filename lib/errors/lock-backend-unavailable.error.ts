import { DistributedLockError } from './distributed-lock.error';

/** The backend could not be reached (or did not answer) within the caller's budget. Fail closed. */
export class LockBackendUnavailableError extends DistributedLockError {
  readonly backend: string;

  constructor(backend: string, message: string, options: { key?: string; cause?: unknown } = {}) {
    const why = options.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(
      'LOCK_BACKEND_UNAVAILABLE',
      `Lock backend "${backend}" is unavailable (${message})${why}`,
      options,
    );
    this.backend = backend;
  }
}
