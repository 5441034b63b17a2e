import { estimateRetryAfter } from '../core/activity/hold-times';
import type { DistributedLockError } from '../errors/distributed-lock.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import type { LockErrorResponse } from '../interfaces/distributed-lock-module-options.interface';

/**
 * The errors a client can act on; the rest (bad options, no module...) are bugs: a generic answer.
 */
export const ANSWERS: Partial<Record<string, { status: number; error: string; message: string }>> =
  {
    LOCK_ACQUIRE_TIMEOUT: {
      status: 409,
      error: 'Conflict',
      message: 'The resource is busy; retry later',
    },
    LOCK_LOST: {
      status: 409,
      error: 'Conflict',
      message: 'The operation lost its lock and was stopped; retry',
    },
    STALE_FENCING_TOKEN: {
      status: 409,
      error: 'Conflict',
      message: 'A newer lock holder has written this resource; this write was refused',
    },
    FENCING_TOKEN_MISSING: {
      status: 400,
      error: 'Bad Request',
      message: 'The request carries no valid fencing token',
    },
    LOCK_KEY_RESOLUTION: {
      status: 400,
      error: 'Bad Request',
      message: 'The request does not identify the resource to lock',
    },
    LOCK_BACKEND_UNAVAILABLE: {
      status: 503,
      error: 'Service Unavailable',
      message: 'The lock service is unavailable; retry later',
    },
  };

/** The generic answer for an error that is a bug, on transports that carry a payload. */
export const INTERNAL = { status: 'error', message: 'Internal server error' };

/**
 * What a client may learn about `error`, or undefined for errors that are bugs (a generic answer).
 */
export function lockErrorResponse(
  error: DistributedLockError,
  expose = false,
): LockErrorResponse | undefined {
  const answer = ANSWERS[error.code];
  if (!answer) return undefined;
  const response: LockErrorResponse = {
    status: answer.status,
    code: error.code,
    message: expose ? error.message : answer.message,
  };
  // Whole seconds (in ms), so the body and HTTP's Retry-After header say the same thing.
  if (error instanceof LockAcquireTimeoutError)
    response.retryAfter =
      retryAfterSeconds(estimateRetryAfter(error, error.key, error.retryAfter)) * 1_000;
  if (expose && error.key !== undefined) response.key = error.key;
  return response;
}

/** The payload RpcException, WsException and GraphQLError extensions carry. */
export function lockErrorPayload(r: LockErrorResponse): Record<string, unknown> {
  const { status: _status, ...payload } = r;
  return payload;
}

/** Retry-After in whole seconds (at least 1), as HTTP wants it. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
