/** Defaults (all durations in ms) and limits shared by the core and the Nest layer. */
export const DEFAULT_TTL_MS = 30_000;
export const DEFAULT_WAIT_MS = 10_000;
export const DEFAULT_KEY_PREFIX = 'lock:';
export const DEFAULT_BACKEND_NAME = 'default';
/** How long one backend call may take when the caller's wait budget is smaller (e.g. wait: 0). */
export const DEFAULT_OPERATION_TIMEOUT_MS = 2_000;
/** Grace after the wait deadline for an attempt already in flight to answer. */
export const DEADLINE_GRACE_MS = 100;
/** Smallest ttl we accept: the watchdog renews at ttl/3, which must leave a round trip of slack. */
export const MIN_TTL_MS = 30;
export { MAX_DURATION_MS, MAX_KEY_LENGTH } from './backend-kit/limits';

export const DISTRIBUTED_LOCK_OPTIONS = Symbol('DISTRIBUTED_LOCK_OPTIONS');
export const LOCKED_METADATA = 'nestjs-distributed-lock:locked';
export const CURRENT_LOCK_PARAM_METADATA = 'nestjs-distributed-lock:current-lock-param';
export const LEADER_ONLY_METADATA = 'nestjs-distributed-lock:leader-only';
