import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { FenceStore } from './fence-store.interface';
import { checkFencingSecret } from './fencing-carrier';
import {
  FENCE_STORE,
  FENCING_SECRET,
  FencedInterceptor,
  type FencingSecret,
} from './fenced.interceptor';
import { FencingExceptionFilter } from './fencing-exception.filter';

export interface DistributedLockFencingOptions {
  /** The fence @Fenced handlers check: RedisFencedStore, PostgresFencedStore, ... (you own it). */
  store: FenceStore;
  /**
   * Accept only grants signed with this secret (or one of these, while rotating): callers send
   * `fencingHeaders(lock, { secret })`. It proves the caller knows the secret, not that it holds
   * the lock. Default: none (the guard then authenticates nothing).
   */
  secret?: FencingSecret;
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
    if (options.secret !== undefined)
      for (const s of [options.secret].flat()) checkFencingSecret(s);
    return {
      module: DistributedLockFencingModule,
      global: true,
      providers: [
        { provide: FENCE_STORE, useValue: store },
        { provide: FENCING_SECRET, useValue: options.secret ?? null },
        FencedInterceptor,
        { provide: APP_FILTER, useClass: FencingExceptionFilter },
      ],
      exports: [FENCE_STORE, FencedInterceptor],
    };
  }
}
