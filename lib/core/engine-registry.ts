import { LockModuleMissingError } from '../errors/lock-module-missing.error';
import type { LockEngine } from './lock-engine';

/** Tells whether an instance belongs to a module (its provider or controller). */
export type InstanceOwnership = (instance: object) => boolean;

/**
 * Which engine serves which @Locked instance. A module's engine opens itself here when it is built
 * (at `compile()`, before any `init()`), with a callback that says whether an instance is one of
 * its module's providers or controllers; the first call on an instance asks the live engines and
 * caches the answer. Instances no module knows (request-scoped, made with `new`) go to the only
 * live engine, or to the fallback a test installed (LockTesting.useEngine); otherwise the call
 * fails with LockModuleMissingError naming the method and the fix, never runs unlocked.
 */
const byInstance = new WeakMap<object, LockEngine>();
const live = new Map<LockEngine, InstanceOwnership | undefined>();
let fallback: LockEngine | undefined;

export const engineRegistry = {
  register(instance: object, engine: LockEngine): void {
    byInstance.set(instance, engine);
  },
  open(engine: LockEngine, owns?: InstanceOwnership): void {
    live.set(engine, owns ?? live.get(engine));
  },
  close(engine: LockEngine): void {
    live.delete(engine);
    if (fallback === engine) fallback = undefined;
  },
  /** Engine for instances that no module owns (tests); undefined removes it. */
  setFallback(engine: LockEngine | undefined): void {
    fallback = engine;
  },
  find(instance: unknown, where: string): LockEngine {
    const isObject = instance !== null && typeof instance === 'object';
    const known = isObject ? byInstance.get(instance) : undefined;
    if (known && live.has(known)) return known;
    if (isObject) {
      for (const [engine, owns] of live) {
        if (owns?.(instance)) {
          byInstance.set(instance, engine);
          return engine;
        }
      }
    }
    if (fallback) return fallback;
    if (live.size === 1) return live.keys().next().value as LockEngine;
    throw new LockModuleMissingError(
      where,
      live.size === 0
        ? `@Locked ${where} was called but no DistributedLockModule exists in this process. Import ` +
            'DistributedLockModule.forRoot({ backend }) (or DistributedLockModule.forTesting() in a test) ' +
            'in the module that provides this class; for an instance made with `new` in a unit test, ' +
            'call LockTesting.useEngine() first'
        : `@Locked ${where} was called on an instance no module created, with ${live.size} ` +
            'DistributedLockModules running: cannot tell which to use. Let Nest create the instance, ' +
            'or pick one with LockTesting.useEngine(engine)',
    );
  },
};
