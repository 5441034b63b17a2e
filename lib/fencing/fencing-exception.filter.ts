import { Catch, Inject, Optional } from '@nestjs/common';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { FencingTokenMissingError } from '../errors/fencing-token-missing.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { StaleFencingTokenError } from '../errors/stale-fencing-token.error';
import { LockExceptionFilter } from '../filters/lock-exception.filter';
import type { DistributedLockModuleOptions } from '../interfaces/distributed-lock-module-options.interface';

/**
 * The lock error filter, for the errors `@Fenced` throws, registered by
 * DistributedLockFencingModule: a downstream service that takes no locks (no DistributedLockModule)
 * still answers a stale call with 409 STALE_FENCING_TOKEN, and a fence store that is down with
 * 503, on every transport. With DistributedLockModule present it reads
 * the same options (errorMapping...), so both filters give the same answer.
 */
@Catch(StaleFencingTokenError, FencingTokenMissingError, LockBackendUnavailableError)
export class FencingExceptionFilter extends LockExceptionFilter {
  constructor(
    @Optional() @Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) options?: DistributedLockModuleOptions,
  ) {
    super(options ?? {});
  }
}
