import {
  Inject,
  Module,
  Optional,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
} from '@nestjs/common';
import { APP_FILTER, DiscoveryModule, HttpAdapterHost } from '@nestjs/core';
import { MemoryLockBackend } from './backends/memory/memory.backend';
import { LockEngine } from './core/lock-engine';
import { LockedExplorer } from './discovery/locked.explorer';
import {
  DistributedLockConfigurableModule,
  DISTRIBUTED_LOCK_MODULE_OPTIONS,
  REQUEST_LIFECYCLE,
} from './distributed-lock.module-definition';
import { LockExceptionFilter } from './filters/lock-exception.filter';
import { resolveErrorMapping } from './filters/lock-error.mapper';
import type { DistributedLockModuleOptions } from './interfaces/distributed-lock-module-options.interface';
import { LockedInterceptor } from './interceptors/locked.interceptor';
import { requestContextMiddleware } from './interceptors/request-context.middleware';
import { LockService } from './services/lock.service';
import { LockTestingHelper } from './testing/lock-testing.helper';
import { LockObservability } from './observability/lock-observability.service';
import { LockStartupChecks } from './observability/startup-checks';
import { DistributedLockHealthIndicator } from './health/lock-health.indicator';

/**
 * DistributedLockModule.forRoot({ backend, keyPrefix, defaults }) or .forRootAsync({ useFactory,
 * inject, imports }): global by default (isGlobal: false to import it where needed). Options are
 * validated once, when the engine is built, for both forms: a bad option fails start-up. It also
 * registers a global filter mapping lock errors per transport (`errorMapping`) and, unless
 * `requestLifecycle: false`, a middleware that lets a lock wait end when its HTTP client goes
 * away (gateways and message handlers get the same from an interceptor bound to them alone).
 * Routes that take no lock pay for neither.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: LockEngine,
      useFactory: (options: DistributedLockModuleOptions) => {
        const {
          httpErrors: _h,
          errorMapping: _e,
          exposeErrorDetails: _x,
          ...engineOptions
        } = options ?? ({} as DistributedLockModuleOptions);
        // fails start-up on a bad errorMapping / httpErrors / exposeErrorDetails
        resolveErrorMapping(options ?? {});
        return new LockEngine(engineOptions);
      },
      inject: [DISTRIBUTED_LOCK_MODULE_OPTIONS],
    },
    LockService,
    LockedExplorer,
    LockedInterceptor,
    { provide: APP_FILTER, useClass: LockExceptionFilter },
    LockObservability,
    LockStartupChecks,
    DistributedLockHealthIndicator,
  ],
  exports: [
    LockEngine,
    LockService,
    LockedInterceptor,
    DISTRIBUTED_LOCK_MODULE_OPTIONS,
    DistributedLockHealthIndicator,
  ],
})
export class DistributedLockModule extends DistributedLockConfigurableModule implements NestModule {
  constructor(
    @Optional() @Inject(REQUEST_LIFECYCLE) private readonly requestLifecycle?: boolean,
    @Optional() private readonly adapterHost?: HttpAdapterHost,
  ) {
    super();
  }

  /**
   * Express gets the middleware straight from its adapter: Nest's route-matching wrapper around a
   * middleware for '*' costs every request more than the middleware itself. Fastify keeps Nest's
   * registration, which also reaches the plugin contexts Nest made for its routes.
   */
  configure(consumer: MiddlewareConsumer): void {
    if (this.requestLifecycle === false) return;
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter?.getType() === 'express') adapter.use(requestContextMiddleware);
    else consumer.apply(requestContextMiddleware).forRoutes('*');
  }

  /**
   * For tests: forRoot on a fresh in-process MemoryLockBackend with `defaults.wait: 0` (a busy lock
   * fails at once, so a test that holds a key gets its 409 without waiting), plus
   * LockTestingHelper. Every option can be overridden, e.g. `forTesting({ defaults: { wait: 1_000 }
   * })`.
   */
  static forTesting(
    options: Partial<DistributedLockModuleOptions> & {
      isGlobal?: boolean;
      requestLifecycle?: boolean;
    } = {},
  ): DynamicModule {
    const backend = options.backend || options.backends ? {} : { backend: new MemoryLockBackend() };
    const dynamic = this.forRoot({
      ...backend,
      ...options,
      defaults: { wait: 0, ...options.defaults },
    });
    return {
      ...dynamic,
      providers: [...(dynamic.providers ?? []), LockTestingHelper],
      exports: [...(dynamic.exports ?? []), LockTestingHelper],
    };
  }
}
