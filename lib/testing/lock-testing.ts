import { MemoryLockBackend } from '../backends/memory/memory.backend';
import { engineRegistry } from '../core/engine-registry';
import { LockEngine, type LockEngineOptions } from '../core/lock-engine';
import type { LockHandle } from '../core/lease/lock-handle';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { LockTestingHelper } from './lock-testing.helper';

/** Anything Nest gives a test that can resolve a provider: INestApplication, TestingModule... */
export interface LockTestingApp {
  get<T = unknown>(token: unknown, options?: { strict: boolean }): T;
}

let installed: LockEngine | undefined;

/**
 * Static helpers for tests. `hold(app, key)` holds a key of a compiled module (forRoot or
 * forTesting) so the code under test finds it busy. `useEngine()` lets @Locked methods of
 * instances made with `new` (no Nest at all) run on an in-memory engine; `reset()` removes it.
 */
export const LockTesting = {
  hold(app: LockTestingApp, key: string, options?: Omit<LockOptions, 'wait'>): Promise<LockHandle> {
    return new LockTestingHelper(app.get(LockEngine, { strict: false })).hold(key, options);
  },

  isHeld(app: LockTestingApp, key: string): Promise<boolean> {
    return new LockTestingHelper(app.get(LockEngine, { strict: false })).isHeld(key);
  },

  /**
   * Serves @Locked methods of instances no module created with `engine` (default: a new engine on
   * a MemoryLockBackend with `defaults.wait: 0`). Returns the engine; call reset() after the test.
   */
  useEngine(engine?: LockEngine | LockEngineOptions): LockEngine {
    const chosen =
      engine instanceof LockEngine
        ? engine
        : new LockEngine({
            backend: new MemoryLockBackend(),
            ...engine,
            defaults: { wait: 0, ...engine?.defaults },
          });
    installed = engine instanceof LockEngine ? undefined : chosen;
    engineRegistry.setFallback(chosen);
    return chosen;
  },

  /** Removes the engine useEngine() installed (closing it if useEngine made it). */
  async reset(): Promise<void> {
    engineRegistry.setFallback(undefined);
    const made = installed;
    installed = undefined;
    await made?.close();
  },
};
