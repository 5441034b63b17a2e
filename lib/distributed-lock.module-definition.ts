import { ConfigurableModuleBuilder, type Provider } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { InvalidLockOptionsError } from './errors/invalid-lock-options.error';
import { RequestLifecycleInterceptor } from './interceptors/request-lifecycle.interceptor';
import type { DistributedLockModuleOptions } from './interfaces/distributed-lock-module-options.interface';

export const {
  ConfigurableModuleClass: DistributedLockConfigurableModule,
  MODULE_OPTIONS_TOKEN: DISTRIBUTED_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: DISTRIBUTED_LOCK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DISTRIBUTED_LOCK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DistributedLockModuleOptions>({ moduleName: 'DistributedLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDistributedLockOptions')
  // requestLifecycle: the global interceptor that stops a lock wait when its client goes away
  // (HTTP, GraphQL over HTTP, TCP microservices). A global interceptor makes Nest run its
  // interceptor pipeline for EVERY request, locked or not (measured: a plain Express route 390 vs
  // 183 µs of CPU per request; docs/benchmarks.md), so an app can opt out with `false`.
  .setExtras({ isGlobal: true, requestLifecycle: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
    providers: [...(definition.providers ?? []), ...requestLifecycle(extras.requestLifecycle)],
  }))
  .build();

function requestLifecycle(enabled: unknown): Provider[] {
  if (typeof enabled !== 'boolean')
    throw new InvalidLockOptionsError('requestLifecycle', enabled, 'true or false');
  return enabled ? [{ provide: APP_INTERCEPTOR, useClass: RequestLifecycleInterceptor }] : [];
}
