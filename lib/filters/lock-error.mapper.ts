import type { ArgumentsHost } from '@nestjs/common';
import { DistributedLockError } from '../errors/distributed-lock.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type {
  DistributedLockModuleOptions,
  LockErrorMapper,
  LockErrorResponse,
  LockTransport,
} from '../interfaces/distributed-lock-module-options.interface';
import { lockErrorResponse } from './lock-error.answers';
import { TRANSPORT_NAMES as TRANSPORTS, transportOf } from './transports/lock-transports';
import type { MappedLockError } from './transports/lock-transport';

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

/**
 * The default answer of each transport (see `transports/`): HttpException (body: statusCode, error,
 * code, message, retryAfter), RpcException / WsException (payload: code, message, retryAfter),
 * GraphQLError (extensions: code, retryAfter). Undefined when the transport's package is missing.
 */
export function defaultLockException(
  transport: string,
  error: DistributedLockError,
  r: LockErrorResponse,
): unknown {
  return transportOf(transport)?.exception(error, r);
}

/** Maps `error` for `host`'s transport with the module's options; undefined: leave it to Nest. */
export function mapLockError(
  error: DistributedLockError,
  host: ArgumentsHost,
  options: { mapping: ResolvedErrorMapping; expose: boolean },
): MappedLockError | undefined {
  const transport = transportOf(host.getType<string>());
  const mode = transport && options.mapping[transport.name];
  if (!mode) return undefined;
  const response = lockErrorResponse(error, options.expose);
  if (!response) return undefined;
  const custom = typeof mode === 'function' ? mode(error, host, response) : undefined;
  if (custom !== undefined) return { exception: custom, response, custom: true };
  const exception = transport.exception(error, response);
  return exception === undefined ? undefined : { exception, response, custom: false };
}

export { DistributedLockError };
export { lockErrorPayload, lockErrorResponse, retryAfterSeconds } from './lock-error.answers';
