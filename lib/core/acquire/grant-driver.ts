import type {
  BackendAcquireResult,
  BackendAttempt,
  LockBackend,
} from '../../interfaces/lock-backend.interface';
import type { LeaseHolder } from '../lease/lock-lease';

/**
 * How one kind of grant is attempted, renewed and released (Curator's LockInternalsDriver). The
 * plain lock's driver is the backend itself; a recipe over a native backend form (a semaphore's
 * permit, an election's term) passes its own, so no recipe field ever travels on the backend's lock
 * requests.
 */
export interface GrantDriver {
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult>;
  /** Leaves the system's queue (LockBackend.leave), when tryAcquire may queue. */
  leave?(request: BackendAttempt): Promise<void>;
  /** Renews and releases the grant (the watchdog batches renewals per holder). */
  readonly holder: LeaseHolder;
  /** What sets this grant apart from the key's plain lock for reentrancy ('' for the lock). */
  readonly reentry: string;
  /** true when several callers of one process may hold at once: they do not queue in one line. */
  readonly manyHolders: boolean;
}

const lockDrivers = new WeakMap<LockBackend, GrantDriver>();

/**
 * The plain lock's grant driver on `backend`: the backend's own methods (made once per backend).
 */
export function lockDriver(backend: LockBackend): GrantDriver {
  let driver = lockDrivers.get(backend);
  if (!driver) {
    // Calls through the backend (not bound copies): a method replaced later is the one called.
    driver = {
      tryAcquire: (request) => backend.tryAcquire(request),
      leave: backend.leave && ((request) => backend.leave!(request)),
      holder: backend,
      reentry: '',
      manyHolders: false,
    };
    lockDrivers.set(backend, driver);
  }
  return driver;
}
