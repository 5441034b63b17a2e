import type { ArgumentsHost } from '@nestjs/common';
import type { LockEngineOptions } from '../core/lock-engine';
import type {
  DistributedLockError,
  DistributedLockErrorCode,
} from '../errors/distributed-lock.error';
import type { LockObservabilityOptions } from './observability-options.interface';

/** The transports whose lock errors the module maps (ArgumentsHost.getType()). */
export type LockTransport = 'http' | 'rpc' | 'ws' | 'graphql';

/** What the default mapping tells a client about a lock error. Safe to show: no key, no address. */
export interface LockErrorResponse {
  /** HTTP status: 409 busy or lost, 400 key not resolvable, 503 backend unavailable. */
  status: number;
  code: DistributedLockErrorCode;
  /** A generic message (the error's own message only with `exposeErrorDetails`). */
  message: string;
  /**
   * Busy only: ms after which the lock is likely free, in whole seconds (Retry-After carries the
   * same value in seconds).
   */
  retryAfter?: number;
  /** Only with `exposeErrorDetails`: the lock key involved. */
  key?: string;
}

/**
 * Replaces the mapping of one transport: return what the client should get (an HttpException,
 * RpcException, WsException, GraphQLError or any value the transport accepts), or undefined to
 * use the default built from `response`.
 */
export type LockErrorMapper = (
  error: DistributedLockError,
  host: ArgumentsHost,
  response: LockErrorResponse,
) => unknown;

/** @deprecated since 0.2: use `errorMapping: { http: mapper }`. Same signature. */
export type LockHttpErrorMapper = LockErrorMapper;

/** Per transport: true (default mapping), false (leave lock errors to Nest) or a mapper. */
export type LockErrorMappingOptions = Partial<Record<LockTransport, boolean | LockErrorMapper>>;

export interface DistributedLockModuleOptions extends LockEngineOptions, LockObservabilityOptions {
  /**
   * Maps lock errors thrown anywhere while a request is handled (a global exception filter):
   * HTTP 409 + Retry-After / 400 / 503, RpcException / WsException with `{ code, message,
   * retryAfter }`, GraphQLError with `extensions.code`. true (default) for every transport; false
   * for none; or per transport `{ http, rpc, ws, graphql }` each true, false or a LockErrorMapper.
   */
  errorMapping?: boolean | LockErrorMappingOptions;
  /** Show the error's own message and key in answers (internal APIs only). Default false. */
  exposeErrorDetails?: boolean;
  /** @deprecated since 0.2: `errorMapping: { http: ... }`. Wins over errorMapping.http when set. */
  httpErrors?: boolean | LockHttpErrorMapper;
}
