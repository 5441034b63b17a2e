import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendAttempt,
  LockBackend,
} from '../../interfaces/lock-backend.interface';
import type { LeaseHolder } from '../lease/lock-lease';

/**
 * How one kind of grant is attempted, renewed and released. The plain lock uses the backend
 * itself; a recipe with a native backend form (a semaphore's permit, an election's term) passes its
 * own, so no recipe field ever travels on the backend's lock requests.
 */
export interface GrantForm {
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult>;
  /** The backend's native queued wait for this form, if it has one. */
  acquire?(request: BackendAcquireRequest): Promise<BackendAcquireResult>;
  /** Renews and releases the grant (the watchdog batches renewals per holder). */
  readonly holder: LeaseHolder;
  /** What sets this grant apart from the key's plain lock for reentrancy ('' for the lock). */
  readonly reentry: string;
  /** true when several callers of one process may hold at once: they do not queue in one line. */
  readonly manyHolders: boolean;
}

const lockForms = new WeakMap<LockBackend, GrantForm>();

/**
 * The plain lock's form of grant on `backend`: the backend's own methods (made once per backend).
 */
export function lockForm(backend: LockBackend): GrantForm {
  let form = lockForms.get(backend);
  if (!form) {
    // Calls through the backend (not bound copies): a method replaced later is the one called.
    form = {
      tryAcquire: (request) => backend.tryAcquire(request),
      acquire: backend.acquire && ((request) => backend.acquire!(request)),
      holder: backend,
      reentry: '',
      manyHolders: false,
    };
    lockForms.set(backend, form);
  }
  return form;
}
