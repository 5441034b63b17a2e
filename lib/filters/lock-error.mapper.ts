import { HttpException, type ArgumentsHost } from '@nestjs/common';
import { estimateRetryAfter } from '../core/activity/hold-times';
import { DistributedLockError } from '../errors/distributed-lock.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import type {
  DistributedLockModuleOptions,
  LockErrorMapper,
  LockErrorResponse,
  LockTransport,
} from '../interfaces/distributed-lock-module-options.interface';
import { optionalPeer, type GraphqlModule, type RpcModule, type WsModule } from './optional-peers';

const TRANSPORTS: readonly LockTransport[] = ['http', 'rpc', 'ws', 'graphql'];

/** The errors a client can act on; the rest (bad options, no module...) are bugs: a plain 500. */
const ANSWERS: Partial<Record<string, { status: number; error: string; message: string }>> = {
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

/** Per transport: false (leave to Nest), true (default) or a mapper. */
export type ResolvedErrorMapping = Record<LockTransport, boolean | LockErrorMapper>;

/** Validates errorMapping / httpErrors / exposeErrorDetails (forRoot and forRootAsync alike). */
export function resolveErrorMapping(options: DistributedLockModuleOptions): {
  mapping: ResolvedErrorMapping;
  expose: boolean;
} {
  const { errorMapping = true, httpErrors, exposeErrorDetails = false } = options;
  const allowed = 'true, false or a function (error, host, response) => exception';
  const check = (name: string, v: unknown) => {
    if (typeof v !== 'boolean' && typeof v !== 'function')
      throw new InvalidLockOptionsError(name, v, allowed);
    return v as boolean | LockErrorMapper;
  };
  const mapping = {} as ResolvedErrorMapping;
  if (typeof errorMapping === 'boolean') {
    for (const t of TRANSPORTS) mapping[t] = errorMapping;
  } else if (
    errorMapping !== null &&
    typeof errorMapping === 'object' &&
    !Array.isArray(errorMapping)
  ) {
    for (const name of Object.keys(errorMapping)) {
      if (!TRANSPORTS.includes(name as LockTransport))
        throw new InvalidLockOptionsError(
          `errorMapping.${name}`,
          errorMapping[name as LockTransport],
          `one of ${TRANSPORTS.join(', ')}`,
        );
    }
    for (const t of TRANSPORTS)
      mapping[t] =
        errorMapping[t] === undefined ? true : check(`errorMapping.${t}`, errorMapping[t]);
  } else {
    throw new InvalidLockOptionsError(
      'errorMapping',
      errorMapping,
      'true, false or { http, rpc, ws, graphql }',
    );
  }
  if (httpErrors !== undefined) mapping.http = check('httpErrors', httpErrors);
  if (typeof exposeErrorDetails !== 'boolean')
    throw new InvalidLockOptionsError('exposeErrorDetails', exposeErrorDetails, 'true or false');
  return { mapping, expose: exposeErrorDetails };
}

/** What a client may learn about `error`, or undefined for errors that are bugs (answered as 500). */
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
  if (error instanceof LockAcquireTimeoutError)
    response.retryAfter = Math.round(estimateRetryAfter(error, error.key, error.retryAfter));
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

/**
 * The default answer of each transport: HttpException (body: statusCode, error, code, message,
 * retryAfter), RpcException / WsException (payload: code, message, retryAfter), GraphQLError
 * (extensions: code, retryAfter). Undefined when the transport's package is missing.
 */
export function defaultLockException(
  transport: string,
  error: DistributedLockError,
  r: LockErrorResponse,
): unknown {
  switch (transport) {
    case 'http': {
      const answer = ANSWERS[r.code];
      return new HttpException(
        { statusCode: r.status, error: answer?.error, ...lockErrorPayload(r) },
        r.status,
        { cause: error },
      );
    }
    case 'rpc': {
      const rpc = optionalPeer<RpcModule>('@nestjs/microservices');
      return rpc ? new rpc.RpcException(lockErrorPayload(r)) : undefined;
    }
    case 'ws': {
      const ws = optionalPeer<WsModule>('@nestjs/websockets');
      return ws ? new ws.WsException(lockErrorPayload(r)) : undefined;
    }
    case 'graphql': {
      const gql = optionalPeer<GraphqlModule>('graphql');
      const { message: _message, ...rest } = lockErrorPayload(r);
      const extensions = { ...rest };
      return gql ? new gql.GraphQLError(r.message, { extensions }) : undefined;
    }
    default:
      return undefined;
  }
}

/** Maps `error` for `host`'s transport with the module's options; undefined: leave it to Nest. */
export function mapLockError(
  error: DistributedLockError,
  host: ArgumentsHost,
  options: { mapping: ResolvedErrorMapping; expose: boolean },
): { exception: unknown; response: LockErrorResponse; custom: boolean } | undefined {
  const transport = host.getType<string>() as LockTransport;
  const mode = options.mapping[transport];
  if (!mode) return undefined;
  const response = lockErrorResponse(error, options.expose);
  if (!response) return undefined;
  const custom = typeof mode === 'function' ? mode(error, host, response) : undefined;
  if (custom !== undefined) return { exception: custom, response, custom: true };
  const exception = defaultLockException(transport, error, response);
  return exception === undefined ? undefined : { exception, response, custom: false };
}

export { DistributedLockError };
