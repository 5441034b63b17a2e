import type { CompiledLockKeys } from '../core/keys/key-list';
import type { LockedOptions } from './lock-options.interface';

/** What @Locked recorded about one method. */
export interface LockedMethod {
  readonly where: string;
  readonly key: CompiledLockKeys;
  readonly options: LockedOptions;
  readonly currentLockIndex: number | undefined;
  /**
   * design:returntype is Observable: the wrapper returns a cold Observable that locks on subscribe.
   */
  readonly returnsObservable: boolean;
}
