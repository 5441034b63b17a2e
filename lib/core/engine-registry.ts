import type { LockEngine } from './lock-engine';

/**
 * Which engine serves which instance. The explorer registers every provider and controller that
 * has @Locked methods at bootstrap; instances it cannot see (request-scoped, created by hand)
 * fall back to the only live engine of the process, and fail clearly when there are several.
 */
const byInstance = new WeakMap<object, LockEngine>();
const live = new Set<LockEngine>();

export const engineRegistry = {
  register(instance: object, engine: LockEngine): void {
    byInstance.set(instance, engine);
  },
  open(engine: LockEngine): void {
    live.add(engine);
  },
  close(engine: LockEngine): void {
    live.delete(engine);
  },
  find(instance: unknown, where: string): LockEngine {
    const engine = instance !== null && typeof instance === 'object' ? byInstance.get(instance) : undefined;
    if (engine) return engine;
    if (live.size === 1) return live.values().next().value as LockEngine;
    throw new Error(
      live.size === 0
        ? `@Locked ${where} was called but no DistributedLockModule is running (import DistributedLockModule.forRoot and call it after app.init())`
        : `@Locked ${where} was called on an instance Nest did not create, with ${live.size} DistributedLockModules running: cannot tell which to use`,
    );
  },
};
