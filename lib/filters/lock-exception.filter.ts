import { Catch, Inject, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { DistributedLockError } from '../errors/distributed-lock.error';
import type { DistributedLockModuleOptions } from '../interfaces/distributed-lock-module-options.interface';
import { mapLockError, resolveErrorMapping, type ResolvedErrorMapping } from './lock-error.mapper';
import type { FilterTools } from './transports/lock-transport';
import { transportOf } from './transports/lock-transports';

/**
 * Global filter (APP_FILTER, registered by DistributedLockModule) for DistributedLockError only:
 * lock errors thrown anywhere while a request is handled (handler, guard, pipe, interceptor,
 * LockService.withLock in a route without @Locked) reach it; no other error does, and filters
 * bound closer to the handler, or registered with app.useGlobalFilters, are asked first. Each
 * transport of `transports/` answers: HTTP (Express and Fastify, through the adapter) with 409 +
 * Retry-After / 400 / 503, microservices with an RpcException payload, gateways with a WsException
 * payload and GraphQL with a GraphQLError. Errors that are bugs (bad options, no module) get each
 * transport's generic internal-error answer, never their text.
 */
@Catch(DistributedLockError)
export class LockExceptionFilter extends BaseExceptionFilter {
  private readonly settings: { mapping: ResolvedErrorMapping; expose: boolean };
  private readonly tools: FilterTools = {
    base: (exception, host) => super.catch(exception, host),
    setHeader: (host, name, value) => {
      const adapter = this.httpAdapterHost?.httpAdapter;
      if (adapter) adapter.setHeader(host.switchToHttp().getResponse(), name, value);
    },
  };

  constructor(@Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) options: DistributedLockModuleOptions) {
    super();
    this.settings = resolveErrorMapping(options ?? {});
  }

  override catch(error: DistributedLockError, host: ArgumentsHost): unknown {
    // the client is gone: nobody to answer, nothing to log
    if (error.code === 'REQUEST_ABORTED') return undefined;
    const transport = transportOf(host.getType<string>());
    // a context type of another package: the returned error is what is thrown
    if (!transport) return error;
    return transport.answer(mapLockError(error, host, this.settings), error, host, this.tools);
  }
}
