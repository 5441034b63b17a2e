import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { FenceStore } from './fence-store.interface';
import { FENCE_STORE, FencedInterceptor } from './fenced.interceptor';
import { FencingExceptionFilter } from './fencing-exception.filter';

export interface DistributedLockFencingOptions {
  /** The fence @Fenced handlers check: RedisFencedStore, PostgresFencedStore, ... (you own it). */
  store: FenceStore;
}

/**
 * Provides the FenceStore of `@Fenced` handlers, globally:
 * `DistributedLockFencingModule.forRoot({ store: new RedisFencedStore({ client }) })`.
 * Independent of DistributedLockModule: a downstream service that takes no locks needs only this
 * (it registers the filter that answers a stale call with 409 STALE_FENCING_TOKEN).
 */
@Module({})
export class DistributedLockFencingModule {
  static forRoot(options: DistributedLockFencingOptions): DynamicModule {
    const store = options?.store;
    if (!store || typeof store.advance !== 'function')
      throw new InvalidLockOptionsError('store', store, 'a FenceStore (an object with advance())');
    return {
      module: DistributedLockFencingModule,
      global: true,
      providers: [
        { provide: FENCE_STORE, useValue: store },
        FencedInterceptor,
        { provide: APP_FILTER, useClass: FencingExceptionFilter },
      ],
      exports: [FENCE_STORE, FencedInterceptor],
    };
  }
}
