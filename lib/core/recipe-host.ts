/**
 * What a recipe (lib/recipes/: semaphore, multi-key, election) may use of the engine: the acquire
 * pipeline's public contract, the registered backends and the option checker. Recipes build on
 * this alone; the pipeline knows no recipe.
 */
import type { LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions, ResolvedLockOptions } from '../interfaces/lock-options.interface';
import type { AcquireCall } from './acquire/pipeline-context';
import type { LockHandle } from './lease/lock-handle';

export interface RecipeHost {
  readonly keyPrefix: string;
  /** The pipeline: one key's grant (a lock, or a recipe's GrantDriver, or a grant it made). */
  acquireOne(call: AcquireCall): Promise<LockHandle>;
  /** The registered backend `name` (InvalidLockOptionsError otherwise). */
  backend(name?: string): LockBackend;
  /** Validated options for one call. */
  resolveOptions(options: LockOptions | undefined, key?: string): ResolvedLockOptions;
  /** The handle of a lock held in the current async context. */
  current(key?: string, backend?: string): LockHandle | undefined;
  /** Runs fn as an owning call (see ReentrancyScopes). */
  runInScope<T>(fn: () => T): T;
}

/** Extra facts about an acquire (see pipeline-context.ts). */
export type { AcquireMeta } from './acquire/pipeline-context';
