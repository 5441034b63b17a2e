import { DistributedLockError } from './distributed-lock.error';

/** The backend could not be reached (or did not answer) within the caller's budget. Fail closed. */
export class LockBackendUnavailableError extends DistributedLockError {
  readonly backend: string;
  /**
   * Set by a backend when no attempt within this wait can succeed (the server is known down, too
   * few replicas acknowledged): the engine's wait ends with it at once instead of retrying.
   */
  readonly final: boolean;

  constructor(
    backend: string,
    message: string,
    options: { key?: string; cause?: unknown; final?: boolean } = {},
  ) {
    const why = options.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(
      'LOCK_BACKEND_UNAVAILABLE',
      `Lock backend "${backend}" is unavailable (${message})${why}`,
      options,
    );
    this.backend = backend;
    this.final = options.final === true;
  }
}
