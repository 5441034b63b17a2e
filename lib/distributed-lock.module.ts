import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LockEngine } from './core/lock-engine';
import { LockedExplorer } from './discovery/locked.explorer';
import { DistributedLockConfigurableModule, DISTRIBUTED_LOCK_MODULE_OPTIONS } from './distributed-lock.module-definition';
import type { DistributedLockModuleOptions } from './interfaces/distributed-lock-module-options.interface';
import { LockedInterceptor } from './interceptors/locked.interceptor';
import { LockService } from './services/lock.service';
import { InvalidLockOptionsError } from './errors/invalid-lock-options.error';
import { LockObservability } from './observability/lock-observability.service';
import { DistributedLockHealthIndicator } from './health/lock-health.indicator';

/**
 * DistributedLockModule.forRoot({ backend, keyPrefix, defaults }) or .forRootAsync({ useFactory,
 * inject, imports }): global by default (isGlobal: false to import it where needed). Options are
 * validated once, when the engine is built, for both forms: a bad option fails start-up.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: LockEngine,
      useFactory: (options: DistributedLockModuleOptions) => {
        const { httpErrors, ...engineOptions } = options ?? ({} as DistributedLockModuleOptions);
        if (httpErrors !== undefined && typeof httpErrors !== 'boolean' && typeof httpErrors !== 'function') {
          throw new InvalidLockOptionsError('httpErrors', httpErrors, 'true, false or a function (error, context) => exception');
        }
        return new LockEngine(engineOptions);
      },
      inject: [DISTRIBUTED_LOCK_MODULE_OPTIONS],
    },
    LockService,
    LockedExplorer,
    LockedInterceptor,
    LockObservability,
    DistributedLockHealthIndicator,
  ],
  exports: [LockEngine, LockService, LockedInterceptor, DISTRIBUTED_LOCK_MODULE_OPTIONS, DistributedLockHealthIndicator],
})
export class DistributedLockModule extends DistributedLockConfigurableModule {}
