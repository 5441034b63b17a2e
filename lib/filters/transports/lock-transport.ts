import type { ArgumentsHost } from '@nestjs/common';
import type { DistributedLockError } from '../../errors/distributed-lock.error';
import type {
  LockErrorResponse,
  LockTransport,
} from '../../interfaces/distributed-lock-module-options.interface';
import type { GoneSource } from '../../interceptors/request-signal';

/**
 * A lock error mapped for a transport: its exception, the safe response, and whether a user mapper
 * made it.
 */
export interface MappedLockError {
  exception: unknown;
  response: LockErrorResponse;
  custom: boolean;
}

/** What the global filter lends a transport's answer (the HTTP adapter and Nest's base filter). */
export interface FilterTools {
  /**
   * Nest's BaseExceptionFilter: answers an HttpException, or logs anything else and answers 500.
   */
  base(exception: unknown, host: ArgumentsHost): unknown;
  setHeader(host: ArgumentsHost, name: string, value: string): void;
}

/**
 * One Nest transport (ArgumentsHost.getType()): the exception a lock error becomes on it, how the
 * module's filter answers with it, and where a handler learns that its client left. The filter,
 * the mapper and the request signal loop over the table in `lock-transports.ts`; a transport is
 * one file. One rule for all: a mapped error answers with its exception, any other lock error
 * (a bug, or a transport whose mapping is off) with the transport's generic internal error.
 */
export interface LockTransportModule {
  readonly name: LockTransport;
  /**
   * The default exception for a client-facing lock error; undefined when the transport's package is
   * missing.
   */
  exception(error: DistributedLockError, response: LockErrorResponse): unknown;
  /** Answers on `host`: `mapped` undefined means the generic internal error. */
  answer(
    mapped: MappedLockError | undefined,
    error: DistributedLockError,
    host: ArgumentsHost,
    tools: FilterTools,
  ): unknown;
  /** What the request's "client left" signal listens to, when the transport can tell. */
  requestSignal?(host: ArgumentsHost): GoneSource | undefined;
}
