import { Catch, HttpException, Inject, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { DistributedLockError } from '../errors/distributed-lock.error';
import type { DistributedLockModuleOptions } from '../interfaces/distributed-lock-module-options.interface';
import {
  mapLockError,
  resolveErrorMapping,
  retryAfterSeconds,
  type ResolvedErrorMapping,
} from './lock-error.mapper';
import type { TransportException } from './optional-peers';

const INTERNAL = { status: 'error', message: 'Internal server error' };

/**
 * Global filter (APP_FILTER, registered by DistributedLockModule) for DistributedLockError only:
 * lock errors thrown anywhere while a request is handled (handler, guard, pipe, interceptor,
 * LockService.withLock in a route without @Locked) reach it; no other error does, and filters
 * bound closer to the handler, or registered with app.useGlobalFilters, are asked first. It answers
 * HTTP (Express and Fastify, through the adapter) with 409 + Retry-After / 400 / 503, microservices
 * with an RpcException payload, gateways with a WsException payload (sent as an `exception` frame,
 * which also reaches platform-ws clients) and GraphQL with a GraphQLError. Errors that are bugs
 * (bad options, no module) get each transport's generic internal-error answer, never their text.
 */
@Catch(DistributedLockError)
export class LockExceptionFilter extends BaseExceptionFilter {
  private readonly settings: { mapping: ResolvedErrorMapping; expose: boolean };

  constructor(@Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) options: DistributedLockModuleOptions) {
    super();
    this.settings = resolveErrorMapping(options ?? {});
  }

  override catch(error: DistributedLockError, host: ArgumentsHost): unknown {
    if (error.code === 'REQUEST_ABORTED') return undefined; // the client is gone: nobody to answer, nothing to log
    const mapped = mapLockError(error, host, this.settings);
    const exception = mapped?.exception ?? error;
    switch (host.getType<string>()) {
      case 'http': {
        if (mapped && !mapped.custom && mapped.response.retryAfter !== undefined) {
          this.setHeader(
            host,
            'Retry-After',
            String(retryAfterSeconds(mapped.response.retryAfter)),
          );
        }
        // A lock error nobody mapped is a bug: BaseExceptionFilter logs it and answers a bare 500.
        return super.catch(exception, host);
      }
      case 'rpc':
        return this.rpc(mapped ? exception : undefined);
      case 'ws':
        return this.ws(mapped ? exception : undefined, host);
      default:
        return exception; // GraphQL and other external contexts: the returned error is what is thrown
    }
  }

  private rpc(exception: unknown): Observable<never> {
    const payload =
      exception === undefined
        ? INTERNAL
        : isTransportException(exception)
          ? exception.getError()
          : exception;
    return throwError(() => payload);
  }

  private ws(exception: unknown, host: ArgumentsHost): void {
    const data =
      exception === undefined
        ? INTERNAL
        : isTransportException(exception)
          ? exception.getError()
          : exception;
    const client = host.switchToWs().getClient<Record<string, unknown>>();
    // socket.io sockets emit to the peer; a platform-ws WebSocket's emit() is local, so send a frame.
    if (client && !('nsp' in client) && typeof client.send === 'function') {
      if (client.readyState === 1)
        (client.send as (s: string) => void)(JSON.stringify({ event: 'exception', data }));
    } else if (client && typeof client.emit === 'function') {
      (client.emit as (e: string, d: unknown) => void)('exception', data);
    }
  }

  private setHeader(host: ArgumentsHost, name: string, value: string): void {
    const adapter = this.httpAdapterHost?.httpAdapter;
    const response = host.switchToHttp().getResponse();
    if (adapter) adapter.setHeader(response, name, value);
  }
}

function isTransportException(value: unknown): value is TransportException {
  return (
    !(value instanceof HttpException) &&
    typeof (value as TransportException | null)?.getError === 'function'
  );
}
