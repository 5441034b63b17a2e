/**
 * Every backend call the engine makes goes through callBackend: a budget in ms, the outage record
 * (LockActivity), and the failure turned into LockBackendUnavailableError (fail closed). Also the
 * "name (kind)" label errors show for a registered backend.
 */
import { MAX_DURATION_MS } from '../../backend-kit/limits';
import { asUnavailable } from '../../backend-kit/wait-loop';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { LockBackend } from '../../interfaces/lock-backend.interface';
import { budgetClock, type Budget } from './budget-clock';
import type { LockActivity } from '../activity/lock-activity';
import type { LockLease } from '../lease/lock-lease';
import type { ReleaseRetries } from '../lease/release-retry';

/** "name (kind)" per backend, made once (not a template string per call). */
const labels = new WeakMap<LockBackend, { name: string; kind: string; label: string }>();

/** Registered name and kind, as errors show them: "default (redis)". */
export function backendLabel(backends: ReadonlyMap<string, LockBackend>, name: string): string {
  const backend = backends.get(name);
  const kind = backend?.name;
  if (!kind || kind === name) return name;
  const cached = labels.get(backend);
  if (cached && cached.name === name && cached.kind === kind) return cached.label;
  const label = `${name} (${kind})`;
  labels.set(backend, { name, kind, label });
  return label;
}

/**
 * One backend call in flight: its budget (budget-clock.ts calls `expire`) and the settle callbacks,
 * in one object instead of a closure each. Only the first outcome counts (an answer after the
 * budget ran out is onLate's business, not an outage's end).
 */
export class BackendCall<T> implements Budget {
  readonly at: number;
  private done = false;
  private resolve!: (value: T) => void;
  private reject!: (error: unknown) => void;

  constructor(
    private readonly activity: LockActivity,
    private readonly backend: string,
    private readonly what: string,
    private readonly budget: number,
    private readonly key: string | undefined,
    private readonly onLate: (() => void) | undefined,
    /** The lease this call releases and who retries it, if it is a release (see callRelease). */
    private readonly released?: { readonly lease: LockLease; readonly retries: ReleaseRetries },
  ) {
    this.at = performance.now() + budget;
  }

  start(op: Promise<T>): Promise<T> {
    const promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    budgetClock.add(this);
    op.then(
      (value) => this.answered(value),
      (cause) => this.failed(cause),
    );
    return promise;
  }

  expire(): void {
    this.done = true;
    const error = new LockBackendUnavailableError(
      this.backend,
      `${this.what} got no answer within ${Math.round(this.budget)} ms`,
      { key: this.key },
    );
    this.activity.settled(this.backend, this.what, error, true);
    this.fail(error);
    this.onLate?.();
  }

  private answered(value: T): void {
    if (this.done) return;
    this.done = true;
    budgetClock.delete(this);
    this.activity.settled(this.backend, this.what);
    this.resolve(value);
  }

  private failed(cause: unknown): void {
    if (this.done) return;
    this.done = true;
    budgetClock.delete(this);
    const error = asUnavailable(cause, this.backend, this.key);
    this.activity.settled(this.backend, this.what, error, true);
    this.fail(error);
  }

  /**
   * Rejects with `error`, after `report` (what a `.catch` that rethrows did, without its promise).
   */
  private fail(error: unknown): void {
    try {
      this.report(error);
    } catch (thrown) {
      return this.reject(thrown);
    }
    this.reject(error);
  }

  /**
   * Told of the call's failure before the caller is: a release's failure is reported
   * (releaseFailed) and retried in the background (ReleaseRetries).
   */
  private report(error: unknown): void {
    if (!this.released) return;
    this.activity.leaseReleaseFailed(this.released.lease, error);
    this.released.retries.start(this.released.lease);
  }
}

/**
 * Runs one backend call within `budget` ms. A call that fails or does not answer in time becomes
 * LockBackendUnavailableError (fail closed); `onLate` lets the caller undo an answer that arrives
 * after.
 */
export function callBackend<T>(
  activity: LockActivity,
  op: Promise<T>,
  backend: string,
  what: string,
  budget: number,
  key?: string,
  onLate?: () => void,
): Promise<T> {
  budget = Math.min(budget, MAX_DURATION_MS);
  return new BackendCall<T>(activity, backend, what, budget, key, onLate).start(op);
}
