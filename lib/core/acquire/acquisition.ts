/**
 * One fresh acquire (no re-entrant hold to reuse), from the checked plan to its handle: the request
 * the backend sees (this object: its signal and onLost are made only when read), the call's budget
 * (budget-clock.ts), the wait's deadline, and the grant turned into a LockLease. A timeout rejects
 * with LockAcquireTimeoutError.
 */
import { MAX_DURATION_MS } from '../../backend-kit/limits';
import { safeValidity } from '../../backend-kit/validity';
import { asUnavailable, WAIT_DEADLINE } from '../../backend-kit/wait-loop';
import { DEADLINE_GRACE_MS } from '../../distributed-lock.constants';
import { LockAcquireTimeoutError } from '../../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockHolderIdentity,
  LockMode,
} from '../../interfaces/lock-backend.interface';
import type { ResolvedLockOptions } from '../../interfaces/lock-options.interface';
import { backendLabel } from './backend-call';
import { budgetClock, type Budget } from './budget-clock';
import type { PipelineContext } from './pipeline-context';
import { lockDriver, type GrantDriver } from './grant-driver';
import type { AcquirePlan } from './pipeline-context';
import type { InFlightAcquire } from '../activity/lock-activity';
import { LockHandle } from '../lease/lock-handle';
import { LockLease } from '../lease/lock-lease';

/** The attempt or wait of `a`: the engine's (waiting.ts). */
function startAttempt(a: Acquisition): Promise<BackendAcquireResult> {
  return a.e.runner.run(a.backend, a.driver, a.label, a, a.plan.record, () => a.onWait());
}

export class Acquisition implements BackendAcquireRequest, Budget, InFlightAcquire {
  readonly key: string;
  readonly owner: string;
  readonly mode: LockMode;
  readonly ttl: number;
  readonly holder: LockHolderIdentity;
  readonly wait: number;
  /** The call's budget runs out at `at` (see budget-clock.ts). */
  readonly at: number;
  readonly backend: LockBackend;
  readonly driver: GrantDriver;
  readonly callerKey: string;
  readonly backendName: string;
  private readonly o: ResolvedLockOptions;
  /** performance.now() when the acquire started (its waiters' age in the operator view). */
  readonly startedAt: number;
  /** Made when first needed (an uncontended grant never reads or aborts the signal). */
  private controller: AbortController | undefined = undefined;
  private armed = false;
  private deadline: ReturnType<typeof setTimeout> | undefined = undefined;
  private onCancel: (() => void) | undefined = undefined;
  /** The caller's signal; from onWait on, combined with the request's (AcquireCall). */
  private callerSignal: AbortSignal | undefined;
  private lostCallback: ((reason: string, cause?: unknown) => void) | undefined = undefined;
  private lease: LockLease | undefined = undefined;
  private attempt: Promise<BackendAcquireResult> | undefined = undefined;
  private done = false;
  private resolve!: (handle: LockHandle) => void;
  private reject!: (error: unknown) => void;

  constructor(
    readonly e: PipelineContext,
    readonly plan: AcquirePlan,
  ) {
    const o = plan.resolved;
    this.key = plan.fullKey;
    this.owner = plan.owner;
    this.mode = o.mode;
    this.ttl = o.ttl;
    this.holder = e.holder;
    this.wait = o.wait;
    // The wait's deadline timer starts only when the request really waits (see onWait), counting
    // from startedAt; the attempt in flight is bounded by the call budget (wait + grace, within
    // what setTimeout honours) either way.
    this.startedAt = performance.now();
    this.at =
      this.startedAt +
      Math.min(MAX_DURATION_MS, Math.max(o.wait + DEADLINE_GRACE_MS, e.operationTimeout));
    this.backend = plan.backend;
    this.driver = plan.call.driver ?? lockDriver(plan.backend);
    this.callerKey = plan.call.key;
    this.backendName = o.backend;
    this.o = o;
    this.callerSignal = o.signal;
  }

  /**
   * The wait's signal. The caller's signal is listened to only from onWait: before, only the first
   * attempt is in flight, and its grant is given back if the caller's signal aborted meanwhile. So
   * an uncontended acquire with a signal (@Locked in an HTTP request) adds no listener.
   */
  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  /**
   * Session backends call it when a granted lock is gone; made on first read (Redis never reads
   * it).
   */
  get onLost(): (reason: string, cause?: unknown) => void {
    return (this.lostCallback ??= (reason, cause) => this.lease?.lose(reason, cause));
  }

  /**
   * "name (kind)", as errors show the backend; made when needed (an uncontended grant never is).
   */
  get label(): string {
    return backendLabel(this.e.backends, this.o.backend);
  }

  /** Runs the acquire: its handle, or a rejection (a timeout: LockAcquireTimeoutError). */
  start(): Promise<LockHandle> {
    return new Promise<LockHandle>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.run();
    });
  }

  /** The budget ran out before the backend answered (called by the budget clock). */
  expire(): void {
    this.done = true;
    const error = new LockBackendUnavailableError(
      this.label,
      `acquire got no answer within ${Math.round(this.at - this.startedAt)} ms`,
      { key: this.callerKey },
    );
    this.e.activity.settled(this.label, 'acquire', error, true);
    void this.abandon(error);
  }

  /**
   * The engine is closing: the wait stops now and the caller gets `error`. A grant after close
   * would hold a lock that no watchdog renews and no close releases, so it is given back; the
   * promise settles when that is done, and close() waits for it (bounded) before it closes the
   * backends, whose clients the give-back needs.
   */
  cancel(error: unknown): Promise<void> {
    if (this.done) return Promise.resolve();
    this.done = true;
    budgetClock.delete(this);
    return this.abandon(error);
  }

  /**
   * Gives up on an attempt still in flight: its answer may still come, and a grant goes back. The
   * promise settles once that answer came and its grant went back (never rejects).
   */
  private abandon(error: unknown): Promise<void> {
    const settled = this.attempt
      ?.then((late) => (late.acquired ? this.giveBack() : undefined))
      .catch((cause) =>
        this.e.activity.releaseFailed(this.o.backend, this.callerKey, 'late-grant', cause),
      );
    this.stop(error);
    return settled ?? Promise.resolve();
  }

  private run(): void {
    const e = this.e;
    const granted = this.plan.call.granted;
    let attempt: Promise<BackendAcquireResult>;
    try {
      // The wait runs outside the caller's context: sessions, subscriptions and timers a backend
      // starts for it must not carry one request's reentrancy scope into everyone's callbacks.
      attempt = granted ? Promise.resolve(granted.result) : e.detached(() => startAttempt(this));
    } catch (error) {
      // A backend that throws synchronously: its error as it is, as an async function rejected.
      this.done = true;
      this.finish();
      return this.reject(error);
    }
    // In flight from here: counted once its first attempt is on its way.
    e.activity.enter(this);
    this.attempt = attempt;
    budgetClock.add(this);
    attempt.then(
      (result) => this.answered(result),
      (cause) => this.failed(cause),
    );
  }

  private answered(result: BackendAcquireResult): void {
    if (this.done) return; // an answer after the budget ran out: expire() handles it
    this.done = true;
    budgetClock.delete(this);
    if (this.e.events.active) this.e.activity.settled(this.label, 'acquire');
    this.finish();
    const signal = this.callerSignal;
    if (!result.acquired) {
      if (signal?.aborted) return this.reject(signal.reason);
      return this.reject(new LockAcquireTimeoutError(this.callerKey, this.wait, result.retryAfter));
    }
    if (signal?.aborted) {
      // Granted, but the caller cancelled meanwhile: give it back, then reject with its reason.
      this.giveBack()
        .catch((cause) =>
          this.e.activity.releaseFailed(this.o.backend, this.callerKey, 'cancelled', cause),
        )
        .then(() => this.reject(signal.reason));
      return;
    }
    try {
      this.resolve(this.granted(result));
    } catch (error) {
      this.reject(error);
    }
  }

  private failed(cause: unknown): void {
    if (this.done) return;
    this.done = true;
    budgetClock.delete(this);
    const error = asUnavailable(cause, this.label, this.callerKey);
    this.e.activity.settled(this.label, 'acquire', error, true);
    this.stop(error);
  }

  /** Gave up (budget, failure): the backend's wait stops now, and the caller gets `error`. */
  private stop(error: unknown): void {
    this.abort(WAIT_DEADLINE);
    this.finish();
    this.reject(error);
  }

  /** The grant as a LockLease the watchdog renews, and its handle. */
  private granted(result: Extract<BackendAcquireResult, { acquired: true }>): LockHandle {
    const e = this.e;
    const o = this.o;
    const backend = this.backend;
    // Validity counts from when the granting request was sent, never from the start of the wait.
    const grantedAt =
      result.sentAt ?? (backend.capabilities.sessionBased ? performance.now() : this.startedAt);
    const lease = new LockLease({
      key: this.callerKey,
      fullKey: this.key,
      owner: this.owner,
      mode: this.mode,
      ttl: this.ttl,
      fencingToken: result.fencingToken,
      backend,
      holder: this.driver.holder,
      backendName: o.backend,
      grantedAt,
      validity: Math.min(result.validity ?? Infinity, safeValidity(this.ttl)),
      maxHold: o.maxHold,
      minHold: o.minHold,
      onEnd: e.forgetLease,
      detached: e.detached,
    });
    this.lease = lease;
    if (e.events.active) e.activity.granted(lease, this.plan.call.keyTemplate);
    e.watchdogs.get(o.backend)?.add(lease);
    const scope = this.plan.scope;
    if (scope) e.scopes.remember(scope, this.plan.id, lease);
    return new LockHandle(lease, e.ops);
  }

  /**
   * Arms the deadline and the caller's cancel, once, when the request waits: busy or queued in the
   * engine's wait (a grant at the first attempt never).
   */
  onWait(): void {
    // Settled already (cancelled by close() while its first attempt was in flight): nothing to arm.
    if (this.armed || this.done) return;
    this.armed = true;
    const request = this.plan.call.requestSignal;
    const signal = (this.callerSignal = request ? request(this.o.signal) : this.o.signal);
    if (signal?.aborted) return this.abort(signal.reason);
    if (signal) {
      this.onCancel = () => this.abort(signal.reason);
      signal.addEventListener('abort', this.onCancel, { once: true });
    }
    const left = this.wait - (performance.now() - this.startedAt);
    if (left <= 0) this.abort(WAIT_DEADLINE);
    else this.deadline = this.e.detached(() => setTimeout(() => this.abort(WAIT_DEADLINE), left));
  }

  /** Aborts the wait's signal (made now if nobody read it yet: a later reader sees it aborted). */
  private abort(reason: unknown): void {
    (this.controller ??= new AbortController()).abort(reason);
  }

  /** What runs once the acquire settles, whatever the outcome. */
  private finish(): void {
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    this.e.activity.leave(this);
    if (this.onCancel) this.callerSignal?.removeEventListener('abort', this.onCancel);
  }

  /** Releases a grant nobody will use (late, or cancelled), outside the caller's context. */
  private giveBack(): Promise<void> {
    const lock: BackendLock = { key: this.key, owner: this.owner, mode: this.mode, ttl: this.ttl };
    return this.e.detached(() => this.driver.holder.release(lock));
  }
}
