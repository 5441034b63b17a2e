import 'reflect-metadata';
import { Observable } from 'rxjs';
import { CURRENT_LOCK_PARAM_METADATA, LOCKED_METADATA } from '../distributed-lock.constants';
import { parseParameterNames, type LockKey } from '../core/keys/lock-key';
import { compileLockKeys } from '../core/keys/key-list';
import { checkPermits } from '../recipes/semaphore';
import { checkDuration, checkMode, checkOnBusy } from '../core/keys/lock-options';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { LockedOptions } from '../interfaces/lock-options.interface';
import { MIN_TTL_MS } from '../distributed-lock.constants';
import type { LockedMethod } from '../interfaces/locked-method.interface';
import { invokeLocked } from './locked-invoker';
import { keyParameterNames } from './key-param.decorator';

const KNOWN = new Set([
  'ttl',
  'wait',
  'mode',
  'backend',
  'onBusy',
  'maxHold',
  'minHold',
  'permits',
  'retryAfter',
]);

/**
 * What a @Locked method may return: the lock is held until the Promise settles or the Observable
 * ends.
 */
export type LockedResult = Promise<unknown> | Observable<unknown>;

/**
 * What the compiler names when `@Locked` decorates a method that returns neither a Promise nor an
 * Observable: a property of this name is missing on the method's descriptor (TS1241 / TS2345).
 */
export type LockedNeedsAsync = {
  '@Locked needs a method that returns a Promise or an Observable: make it async': true;
};

/**
 * The decorator @Locked returns. `@Locked` on a method that returns neither a Promise nor an
 * Observable (such a method would silently start returning a Promise) is a compile error whose
 * text says so (see LockedNeedsAsync); a key function's parameters are checked against the
 * method's.
 */
export type LockedMethodDecorator<A extends unknown[]> = <
  T extends (...args: [...A, ...any[]]) => unknown,
>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T> &
    ([ReturnType<T>] extends [LockedResult] ? unknown : LockedNeedsAsync),
) => TypedPropertyDescriptor<T> | void;

/**
 * Runs the method under a distributed lock. `key` is a template (`'order:<id>'` reads the
 * parameter named id, `'<dto.customer.id>'` a path, `'<0>'` / `'<1.id>'` by position, `'<id:int>'`
 * / `'<id:uuid>'` a canonical value; values are encoded; a parameter can be named explicitly with
 * @KeyParam, which survives minification), a function of the arguments, or an array of templates
 * (a multi-key lock: every key or none, in canonical order, so opposite orders cannot deadlock).
 * Works on controller
 * handlers and on plain provider methods alike: the method is wrapped here, so the key sees the
 * real arguments (after pipes).
 * The wrapped method always returns a Promise, except one declared to return an Observable, which
 * stays a cold Observable that locks on subscribe and releases when it ends.
 *
 * A key function receives the method's arguments; annotate its parameters and they are checked
 * against the method's (`@Locked((id: string) => `order:${id}`)` on `pay(id: string, ...)`).
 * Errors in the template or options fail here, at class definition (application start-up).
 *
 * On a method that returns neither a Promise nor an Observable, tsc reports TS1241 ("Unable to
 * resolve signature of method decorator") ending in: Property ''@Locked needs a method that returns
 * a Promise or an Observable: make it async'' is missing. Make the method `async`.
 */
export function Locked<A extends unknown[] = any[]>(
  key: string | readonly string[] | ((...args: A) => string),
  options: LockedOptions = {},
): LockedMethodDecorator<A> {
  return <T extends (...args: [...A, ...any[]]) => unknown>(
    target: object,
    propertyKey: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ) => {
    const original = descriptor?.value;
    const where = `${(target as { constructor: Function }).constructor?.name ?? 'anonymous'}.${String(propertyKey)}()`;
    if (typeof original !== 'function')
      throw new InvalidLockOptionsError('@Locked', original, `a method (${where})`);
    checkLockedOptions(options, where);
    const method: LockedMethod = {
      where,
      key: compileLockKeys(
        key as LockKey | readonly string[],
        keyParameterNames(parseParameterNames(original), target, propertyKey),
        where,
      ),
      options: { ...options },
      currentLockIndex: Reflect.getMetadata(CURRENT_LOCK_PARAM_METADATA, target, propertyKey),
      returnsObservable:
        Reflect.getMetadata('design:returntype', target, propertyKey) === Observable,
    };
    const wrapper = function (this: unknown, ...args: unknown[]) {
      return invokeLocked(this, original, args, method);
    };
    // Keep what other decorators put on the method (route, Swagger, guards...), whichever order
    // they run in.
    for (const metaKey of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(metaKey, Reflect.getMetadata(metaKey, original), wrapper);
    }
    Object.defineProperty(wrapper, 'name', { value: original.name });
    Reflect.defineMetadata(LOCKED_METADATA, method, wrapper);
    descriptor.value = wrapper as unknown as T;
    return descriptor;
  };
}

/** Static checks of @Locked options; backend names are checked at bootstrap by the explorer. */
function checkLockedOptions(options: LockedOptions, where: string): void {
  if (options === null || typeof options !== 'object')
    throw new InvalidLockOptionsError('@Locked options', options, `an object (${where})`);
  for (const [name, value] of Object.entries(options)) {
    if (!KNOWN.has(name))
      throw new InvalidLockOptionsError(
        name,
        value,
        `one of ${[...KNOWN].join(', ')} (unknown option of @Locked on ${where})`,
      );
  }
  if (options.ttl !== undefined) checkDuration('ttl', options.ttl, MIN_TTL_MS, where);
  if (options.wait !== undefined) checkDuration('wait', options.wait, 0, where);
  if (options.maxHold !== undefined) checkDuration('maxHold', options.maxHold, 1, where);
  if (options.minHold !== undefined) checkDuration('minHold', options.minHold, 1, where);
  if (options.permits !== undefined) checkPermits(options.permits, where);
  if (options.retryAfter !== undefined) checkDuration('retryAfter', options.retryAfter, 0, where);
  if (options.mode !== undefined) checkMode('mode', options.mode, where);
  if (options.onBusy !== undefined) checkOnBusy('onBusy', options.onBusy, where);
  if (
    options.backend !== undefined &&
    (typeof options.backend !== 'string' || options.backend.length === 0)
  ) {
    throw new InvalidLockOptionsError(
      'backend',
      options.backend,
      `a registered backend name (${where})`,
    );
  }
}
