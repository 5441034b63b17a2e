import type { BackendAcquireResult, LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions, ResolvedLockOptions } from '../interfaces/lock-options.interface';
import type { AcquireRunner } from './acquire-runner';
import type { LockActivity } from './lock-activity';
import type { LockEventBus } from './lock-events';
import type { LeaseOps, LockHandle } from './lock-handle';
import type { LockLease } from './lock-lease';
import type { ResolvedDefaults } from './lock-options';
import type { ReentrancyScope, ReentrancyScopes } from './reentrancy';
import type { SlotSet } from './slot-set';
import type { Watchdog } from './watchdog';

/** The engine's state the acquire path reads and updates; one object per engine, made at construction. */
export interface AcquireContext {
  readonly backends: ReadonlyMap<string, LockBackend>;
  readonly backendNames: readonly string[];
  readonly keyPrefix: string;
  readonly defaults: ResolvedDefaults;
  readonly operationTimeout: number;
  readonly events: LockEventBus;
  readonly activity: LockActivity;
  readonly scopes: ReentrancyScopes;
  readonly runner: AcquireRunner;
  readonly held: SlotSet<LockLease>;
  readonly watchdogs: ReadonlyMap<string, Watchdog>;
  readonly ops: LeaseOps<LockLease>;
  /** Set by LockEngine.close(). */
  closed: boolean;
  /** Runs fn outside every caller's async context (see ReentrancyScopes.detached). */
  readonly detached: <T>(fn: () => T) => T;
  /** detached(() => fn(arg)) without that closure (ReentrancyScopes.detachedWith). */
  readonly detachedWith: <A, T>(fn: (arg: A) => T, arg: A) => T;
  /** Called once per lease when it ends; made once per engine (see LockEngine.forgetLease). */
  readonly forgetLease: (lease: LockLease) => void;
}

/** An acquire's outcome as the observed path reads it (observed-acquire.ts). */
export interface LeaseOutcome {
  handle?: LockHandle;
  error?: unknown;
}

/** What the checks in lock-acquirer.ts settled for one fresh acquire. */
export interface FreshAcquirePlan {
  /** The key as the caller gave it (errors and events show it). */
  readonly key: string;
  readonly fullKey: string;
  readonly owner: string;
  readonly options: LockOptions | undefined;
  readonly resolved: ResolvedLockOptions;
  readonly backend: LockBackend;
  readonly permits: number | undefined;
  readonly proposal: string | undefined;
  readonly stats: { attempts: number; ahead: number } | undefined;
  /** The owning call this acquire is the own lock of (see ReentrancyScopes.claim), and its id. */
  readonly scope: ReentrancyScope | undefined;
  readonly id: string;
  /** A grant made beforehand (multi-key acquires): its result stands in for the attempt. */
  readonly pregranted: BackendAcquireResult | undefined;
  /** true when the backend's own queued wait runs it (see waitsNatively). */
  readonly native: boolean;
  /** true: settle as the handle (a timeout rejects); false: as `{ handle }` or `{ error }`. */
  readonly direct: boolean;
}
