import 'reflect-metadata';
import { CURRENT_LOCK_PARAM_METADATA } from '../distributed-lock.constants';

/**
 * Injects the LockHandle of the enclosing @Locked method into this parameter (controllers and
 * providers alike). The argument the caller (or Nest) passed in that position is replaced.
 */
export function CurrentLock(): ParameterDecorator {
  return (target, propertyKey, index) => {
    if (propertyKey === undefined) return;
    Reflect.defineMetadata(CURRENT_LOCK_PARAM_METADATA, index, target, propertyKey);
  };
}
