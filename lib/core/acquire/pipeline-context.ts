/**
 * The acquire pipeline's types: what a call asks for (AcquireCall), what the checks settle
 * (AcquirePlan), and the engine state the pipeline reads (PipelineContext).
 */
import type {
  BackendAcquireResult,
  LockBackend,
  LockHolderIdentity,
} from '../../interfaces/lock-backend.interface';
import type { LockOptions, ResolvedLockOptions } from '../../interfaces/lock-options.interface';
import type { LockActivity } from '../activity/lock-activity';
import type { LockEventBus } from '../activity/lock-events';
import type { LeaseOps } from '../lease/lock-handle';
import type { LockLease } from '../lease/lock-lease';
import type { ReleaseRetries } from '../lease/release-retry';
import type { Watchdog } from '../lease/watchdog';
import type { ResolvedDefaults } from '../keys/lock-options';
import type { GrantDriver } from './grant-driver';
import type { ReentrancyScope, ReentrancyScopes } from './reentrancy';
import type { AcquireRunner } from './waiting';

export type { GrantDriver } from './grant-driver';

/** Extra facts about an acquire: where it came from, and what else can end its wait. */
export interface AcquireMeta {
  /** The @Locked key template the key came from, for events and spans. */
  readonly keyTemplate?: string;
  /**
   * The signal of the request the call runs for (a client that leaves ends the wait), combined
   * with the caller's own; called only once the acquire has to wait.
   */
  readonly requestSignal?: (own: AbortSignal | undefined) => AbortSignal | undefined;
  /**
   * The key came from a template whose literals were checked at start-up and whose values were
   * encoded: it cannot hold what checkLockKey refuses, so only its length is checked.
   */
  readonly keyChecked?: boolean;
}

/** One call into the pipeline. */
export interface AcquireCall extends AcquireMeta {
  /** The key as the caller gave it (without the module's prefix). */
  readonly key: string;
  readonly options: LockOptions | undefined;
  /** The recipe's grant driver; absent: the plain lock of the key. */
  readonly driver?: GrantDriver;
  /** A grant a recipe already made (a multi-key step): it becomes a lease without an attempt. */
  readonly granted?: { readonly owner: string; readonly result: BackendAcquireResult };
}

/** What one acquire did, as observation reads it. */
export interface AcquireRecord {
  /** Backend attempts made (0: a re-entry). */
  attempts: number;
  /** Acquires of the key already in flight in this process when this one started. */
  ahead: number;
}

/** What the checks settled for one fresh acquire (no re-entrant hold to reuse). */
export interface AcquirePlan {
  readonly call: AcquireCall;
  readonly fullKey: string;
  readonly owner: string;
  readonly resolved: ResolvedLockOptions;
  readonly backend: LockBackend;
  readonly record: AcquireRecord;
  /** The owning call this acquire is the own lock of (see ReentrancyScopes.claim), and its id. */
  readonly scope: ReentrancyScope | undefined;
  readonly id: string;
}

/** The engine's state the pipeline reads and updates; one object per engine. */
export interface PipelineContext {
  readonly backends: ReadonlyMap<string, LockBackend>;
  readonly backendNames: readonly string[];
  readonly keyPrefix: string;
  /** Who this engine's grants belong to (stored with each grant where the backend can). */
  readonly holder: LockHolderIdentity;
  readonly defaults: ResolvedDefaults;
  readonly operationTimeout: number;
  readonly events: LockEventBus;
  readonly activity: LockActivity;
  readonly scopes: ReentrancyScopes;
  readonly runner: AcquireRunner;
  readonly watchdogs: ReadonlyMap<string, Watchdog>;
  readonly ops: LeaseOps<LockLease>;
  /** Failed releases retried in the background until they answer or their ttl passes. */
  readonly releaseRetries: ReleaseRetries;
  /** Set by LockEngine.close(). */
  closed: boolean;
  /** Runs fn outside every caller's async context (see ReentrancyScopes.detached). */
  readonly detached: <T>(fn: () => T) => T;
  /** Called once per lease when it ends. */
  readonly forgetLease: (lease: LockLease) => void;
}
