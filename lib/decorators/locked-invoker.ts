import { isObservable, Observable, type Subscription } from 'rxjs';
import type { LockEngine } from '../core/lock-engine';
import type { LockHandle } from '../core/lease/lock-handle';
import { checkLockKey } from '../backend-kit/key-encoding';
import { DistributedLockError } from '../errors/distributed-lock.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockKeyResolutionError } from '../errors/lock-key-resolution.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { LockedMethod } from '../interfaces/locked-method.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { engineRegistry } from '../core/engine-registry';
import { MAX_KEY_LENGTH } from '../backend-kit/limits';
import { holdTimes, retryAfterHints } from '../core/activity/hold-times';
import { requestSignalOf } from '../interceptors/request-signal';
import { reported, runHeld } from '../core/activity/observe';

/**
 * Runs a @Locked method: resolve the key from the real arguments (after Nest's pipes, so the same
 * rule holds on controllers and services), acquire in a fresh reentrancy scope, run the method,
 * and hold the lock until its Promise settles or its Observable completes, errors or is
 * unsubscribed. A lost lock fails the call at once with LockLostError.
 */
export function invokeLocked(
  instance: unknown,
  original: Function,
  args: unknown[],
  method: LockedMethod,
): unknown {
  if (method.returnsObservable) return lockedObservable(instance, original, args, method);
  let engine: LockEngine;
  try {
    engine = engineRegistry.find(instance, method.where);
  } catch (error) {
    return Promise.reject(error); // the method is async: it rejects, never throws
  }
  return engine.runInScope(async () => {
    const key = resolveKey(engine, args, method);
    let handle: LockHandle | null;
    try {
      handle = await acquireFor(engine, key, method);
    } catch (error) {
      handle = whenBusy(engine, key, method, error);
    }
    if (!handle) return undefined;
    const grantedAt = performance.now();
    let result: unknown;
    try {
      const run = () => original.apply(instance, withHandle(args, method, handle));
      result = await handle.raceLost(
        runHeld(engine, handle, method.options.backend, run, method.key.template),
      );
    } catch (error) {
      recordHold(handle, key, grantedAt);
      await handle.release().catch(reported);
      throw error;
    }
    if (isObservable(result)) return holdUntilDone(result, timed(handle, key, grantedAt));
    recordHold(handle, key, grantedAt);
    await handle.release().catch(reported);
    return result;
  });
}

function lockedObservable(
  instance: unknown,
  original: Function,
  args: unknown[],
  method: LockedMethod,
): Observable<unknown> {
  return new Observable((subscriber) => {
    let inner: Subscription | undefined;
    let handle: LockHandle | null | undefined;
    let closed = false;
    let engine: LockEngine;
    try {
      engine = engineRegistry.find(instance, method.where);
    } catch (error) {
      subscriber.error(error);
      return;
    }
    engine
      .runInScope(async () => {
        const key = resolveKey(engine, args, method);
        const granted = await acquireFor(engine, key, method).catch((error: unknown) =>
          whenBusy(engine, key, method, error),
        );
        handle = granted && timed(granted, key, performance.now());
        if (!handle) return subscriber.complete();
        if (closed) return void (await handle.release());
        const h = handle;
        const source = original.apply(instance, withHandle(args, method, h)) as Observable<unknown>;
        inner = holdUntilDone(source, h).subscribe(subscriber);
      })
      .catch((error) => subscriber.error(error));
    return () => {
      closed = true;
      inner?.unsubscribe();
      void handle?.release().catch(reported);
    };
  });
}

/**
 * Mirrors `source`, failing it with LockLostError when the lock is lost; releases on complete,
 * error or unsubscribe.
 */
function holdUntilDone(source: Observable<unknown>, handle: LockHandle): Observable<unknown> {
  return new Observable((subscriber) => {
    const onLost = () => subscriber.error(handle.signal.reason);
    if (handle.signal.aborted) onLost();
    else handle.signal.addEventListener('abort', onLost, { once: true });
    const sub = source.subscribe({
      next: (v) => subscriber.next(v),
      error: (e) => subscriber.error(e),
      complete: () => subscriber.complete(),
    });
    return () => {
      handle.signal.removeEventListener('abort', onLost);
      sub.unsubscribe();
      void handle.release().catch(reported);
    };
  });
}

/**
 * What a @Locked method's calls share, made once per method and engine (not per call): the engine
 * options (checked at start-up), the acquire's meta and the key length limit of its backend.
 */
interface MethodPlan {
  engine: LockEngine;
  options: LockOptions;
  meta: { keyTemplate: string | undefined; keyChecked: boolean };
  maxKeyLength: number;
  /**
   * Keys from templates (checked literals, encoded values): only their length needs checking per
   * call. A key function's keys are checked in full.
   */
  templated: boolean;
}
const plans = new WeakMap<LockedMethod, MethodPlan>();

function planFor(engine: LockEngine, method: LockedMethod): MethodPlan {
  const cached = plans.get(method);
  if (cached?.engine === engine) return cached;
  const { onBusy = engine.defaults.onBusy, retryAfter: _retryAfter, ...rest } = method.options;
  const options: LockOptions = { ...rest, ...(onBusy === 'wait' ? {} : { wait: 0 }) };
  const parts = method.key.parts ?? [method.key];
  const templated = parts.every((part) => part.literals !== undefined);
  const plan: MethodPlan = {
    engine,
    options: Object.freeze(options),
    meta: Object.freeze({ keyTemplate: method.key.template, keyChecked: templated }),
    templated,
    maxKeyLength: Math.min(
      MAX_KEY_LENGTH,
      engine.backend(method.options.backend).capabilities.maxKeyLength,
    ),
  };
  plans.set(method, plan);
  return plan;
}

/**
 * @Locked methods that @nestjs/schedule calls (@Cron, @Interval, @Timeout), marked by the explorer.
 * Nobody awaits a scheduled call but the scheduler, which logs a rejection as an ERROR with its
 * stack: a tick whose wait ran out is skipped instead (a 'skipped' event), as with onBusy 'skip'.
 */
const scheduled = new WeakSet<LockedMethod>();

export function markScheduled(method: LockedMethod): void {
  scheduled.add(method);
}

/** Starts the acquire of a @Locked call (synchronously: it is the call's own lock). */
function acquireFor(
  engine: LockEngine,
  key: string | string[],
  method: LockedMethod,
): Promise<LockHandle> {
  const plan = planFor(engine, method);
  // Inside a request, the wait ends when the client goes away (the module's middleware).
  const requestSignal = requestSignalOf();
  return engine.acquire(
    key,
    plan.options,
    requestSignal ? { ...plan.meta, requestSignal } : plan.meta,
  );
}

/**
 * A @Locked acquire failed: null when its wait ran out and the call is skipped (onBusy 'skip', or a
 * scheduled tick); otherwise throws the error (a timeout with the method's retryAfter hint).
 */
function whenBusy(
  engine: LockEngine,
  key: string | string[],
  method: LockedMethod,
  error: unknown,
): null {
  if (!(error instanceof LockAcquireTimeoutError)) throw error;
  const { onBusy = engine.defaults.onBusy, retryAfter } = method.options;
  if (onBusy === 'skip' || scheduled.has(method)) {
    if (engine.events.active)
      engine.events.emit({
        type: 'skipped',
        at: Date.now(),
        backend: method.options.backend ?? 'default',
        key: typeof key === 'string' ? key : key.join(', '),
        keyTemplate: method.key.template,
        where: method.where,
      });
    return null;
  }
  if (retryAfter !== undefined) retryAfterHints.set(error, retryAfter);
  throw error;
}

/** Feeds the key's hold time (while still held) to the Retry-After estimate. */
function recordHold(handle: LockHandle, key: string | readonly string[], grantedAt: number): void {
  const watched =
    typeof key === 'string' ? holdTimes.watches(key) : key.some((k) => holdTimes.watches(k));
  if (!watched || !handle.held) return;
  const ms = performance.now() - grantedAt;
  if (typeof key === 'string') holdTimes.record(key, ms);
  else for (const k of key) holdTimes.record(k, ms);
}

/** Feeds the key's hold time to the Retry-After estimate when the handle is released. */
export function timed(
  handle: LockHandle,
  key: string | readonly string[],
  grantedAt = performance.now(),
): LockHandle {
  const release = handle.release.bind(handle);
  handle.release = async () => {
    recordHold(handle, key, grantedAt);
    return release();
  };
  return handle;
}

function resolveKey(engine: LockEngine, args: unknown[], method: LockedMethod): string | string[] {
  const key = method.key.resolve(args);
  const { maxKeyLength, templated } = planFor(engine, method);
  try {
    if (typeof key === 'string') checkKey(engine, key, maxKeyLength, templated);
    else for (const k of key) checkKey(engine, k, maxKeyLength, templated);
  } catch (error) {
    // A key built from request values that does not fit is the request's fault (400), not the
    // code's.
    const message =
      error instanceof InvalidLockOptionsError
        ? `got ${error.got}; allowed: ${error.allowed}`
        : error instanceof DistributedLockError
          ? error.message
          : String(error);
    throw new LockKeyResolutionError(method.key.template, message);
  }
  return key;
}

function checkKey(engine: LockEngine, key: string, maxKeyLength: number, templated: boolean): void {
  if (templated && engine.keyPrefix.length + key.length <= maxKeyLength) return;
  checkLockKey(key);
  checkLockKey(engine.keyPrefix + key, maxKeyLength);
}

function withHandle(args: unknown[], method: LockedMethod, handle: LockHandle): unknown[] {
  if (method.currentLockIndex === undefined) return args;
  const copy = [...args];
  copy[method.currentLockIndex] = handle;
  return copy;
}
