import { ConfigurableModuleBuilder, type Provider } from '@nestjs/common';
import { InvalidLockOptionsError } from './errors/invalid-lock-options.error';
import type { DistributedLockModuleOptions } from './interfaces/distributed-lock-module-options.interface';

export const {
  ConfigurableModuleClass: DistributedLockConfigurableModule,
  MODULE_OPTIONS_TOKEN: DISTRIBUTED_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: DISTRIBUTED_LOCK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DISTRIBUTED_LOCK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DistributedLockModuleOptions>({ moduleName: 'DistributedLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDistributedLockOptions')
  // requestLifecycle: the middleware that lets a lock wait stop when its HTTP client goes away
  // (GraphQL over HTTP included). Not a global interceptor: that would put every route, locked or
  // not, through Nest's interceptor pipeline. `false` registers no middleware.
  .setExtras({ isGlobal: true, requestLifecycle: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
    providers: [...(definition.providers ?? []), ...requestLifecycle(extras.requestLifecycle)],
  }))
  .build();

/**
 * Whether DistributedLockModule applies its request-context middleware (the `requestLifecycle`
 * extra).
 */
export const REQUEST_LIFECYCLE = Symbol('DistributedLock:requestLifecycle');

function requestLifecycle(enabled: unknown): Provider[] {
  if (typeof enabled !== 'boolean')
    throw new InvalidLockOptionsError('requestLifecycle', enabled, 'true or false');
  return [{ provide: REQUEST_LIFECYCLE, useValue: enabled }];
}
