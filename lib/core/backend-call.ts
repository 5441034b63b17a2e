/**
 * Every backend call the engine makes goes through callBackend: a budget in ms, the outage record
 * (LockActivity), and the failure turned into LockBackendUnavailableError (fail closed). Also the
 * "name (kind)" label errors show for a registered backend.
 */
import { MAX_DURATION_MS } from '../backend-kit/limits';
import { asUnavailable } from '../backend-kit/wait-loop';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockBackend } from '../interfaces/lock-backend.interface';
import { budgetClock, type Budget } from './budget-clock';
import type { LockActivity } from './lock-activity';

/** Registered name and kind, as errors show them: "default (redis)". */
export function backendLabel(backends: ReadonlyMap<string, LockBackend>, name: string): string {
  const kind = backends.get(name)?.name;
  return kind && kind !== name ? `${name} (${kind})` : name;
}

/**
 * Runs one backend call within `budget` ms. A call that fails or does not answer in time becomes
 * LockBackendUnavailableError (fail closed); `onLate` lets the caller undo an answer that arrives after.
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
  // Outages are noted here, in the settle callbacks this call needs anyway; only the first
  // outcome counts (an answer after the budget ran out is onLate's business, not an outage's end).
  let done = false;
  return new Promise<T>((resolve, reject) => {
    // One shared timer (budget-clock.ts), not a setTimeout/clearTimeout pair per call.
    const timer: Budget = {
      at: performance.now() + budget,
      expire: () => {
        done = true;
        const error = new LockBackendUnavailableError(
          backend,
          `${what} got no answer within ${Math.round(budget)} ms`,
          { key },
        );
        activity.settled(backend, what, error, true);
        reject(error);
        onLate?.();
      },
    };
    budgetClock.add(timer);
    op.then(
      (value) => {
        if (done) return;
        done = true;
        budgetClock.delete(timer);
        activity.settled(backend, what);
        resolve(value);
      },
      (cause) => {
        if (done) return;
        done = true;
        budgetClock.delete(timer);
        const error = asUnavailable(cause, backend, key);
        activity.settled(backend, what, error, true);
        reject(error);
      },
    );
  });
}
