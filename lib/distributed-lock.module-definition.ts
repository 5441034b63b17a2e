import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { DistributedLockModuleOptions } from './interfaces/distributed-lock-module-options.interface';

export const {
  ConfigurableModuleClass: DistributedLockConfigurableModule,
  MODULE_OPTIONS_TOKEN: DISTRIBUTED_LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: DISTRIBUTED_LOCK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DISTRIBUTED_LOCK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DistributedLockModuleOptions>({ moduleName: 'DistributedLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDistributedLockOptions')
  .setExtras({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();
