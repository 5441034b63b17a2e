/**
 * The backend kit: what a lock backend needs and nothing else (the contract and its optional
 * extensions, the wait hooks, key encoding, the option checker, validity and token helpers, the
 * errors a backend throws), published as
 * `nestjs-distributed-lock/backend-kit`. The seven built-in backends import only this, the errors
 * and the contract, so a third-party backend can be written from the public API alone
 * (docs/writing-a-backend.md).
 */
export type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
  BackendWaitPolicy,
  ElectionBackend,
  LockBackend,
  LockBackendCapabilities,
  LockHolderIdentity,
  LockHolderInfo,
  LockInspection,
  LockMode,
  ReleaseListener,
  SemaphoreBackend,
  WakeupSource,
} from '../interfaces/lock-backend.interface';
export { WAIT_DEADLINE, sleepFor, raceAbort, asUnavailable } from './wait-loop';
export { ReleaseNotifier } from './release-notifier';
export {
  checkOptionsObject,
  checkKnownOptions,
  checkDuration,
  checkInteger,
  checkNumber,
  checkBoolean,
  checkString,
  checkOneOf,
  checkClient,
} from './option-checker';
export { encodeKeyPart, checkLockKey } from './key-encoding';
export { safeValidity, minimumTtl } from './validity';
export { toBigInt } from './tokens';
export { MAX_DURATION_MS, MAX_KEY_LENGTH } from './limits';
export { CLOSE_TIMEOUT_MS, within } from './bounded';
export { holderData, holderMetadata, MAX_HOLDER_DATA } from './holder-data';
export { markPartial, isPartial, type ListAnswer } from './list-answer';
export {
  DistributedLockError,
  InvalidLockOptionsError,
  LockBackendUnavailableError,
} from '../errors';
