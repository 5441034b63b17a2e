/**
 * The deadlines of the engine's backend calls on ONE timer per process, not a setTimeout and a
 * clearTimeout per call: a call adds its budget and deletes it when it answers; the timer is armed
 * for the earliest budget and, when it fires, fails every budget that is due and re-arms for the
 * next. The armed timer stays armed across calls (held, ref'd, only while a call is pending, so an
 * idle process can exit). A budget fails at its due time, or up to one timer tick later.
 */
import { ContextRoot } from './context-root';
import { SteadySet } from '../../backend-kit/steady-collections';

export interface Budget {
  /** performance.now() at which the call is out of budget. */
  readonly at: number;
  /** Called once, when `at` passes while the budget is still pending. */
  expire(): void;
}

class BudgetClock {
  private readonly pending = new SteadySet<Budget>();
  private timer?: ReturnType<typeof setTimeout>;
  private armedAt = Infinity;
  // The timer's callback runs in the context of the module's load, never in one caller's
  // (AsyncLocalStorage: a request's reentrancy scope must not leak into another call's expiry).
  private readonly scope = new ContextRoot('DistributedLockBudgetClock');

  add(budget: Budget): void {
    if (this.pending.has(budget)) return;
    this.pending.add(budget);
    if (budget.at < this.armedAt) this.arm(budget.at);
    else if (this.pending.size === 1) this.timer?.ref();
  }

  delete(budget: Budget): void {
    if (this.pending.delete(budget) && this.pending.size === 0) this.timer?.unref();
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedAt = at;
    const wait = Math.max(0, at - performance.now());
    this.timer = this.scope.runInAsyncScope(() => setTimeout(this.tick, wait));
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    this.armedAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    const due: Budget[] = [];
    for (const b of this.pending) {
      if (b.at <= now) due.push(b);
      else if (b.at < next) next = b.at;
    }
    for (const budget of due) this.pending.delete(budget);
    if (next < Infinity) this.arm(next);
    for (const budget of due) budget.expire();
  };
}

/** The process's budget clock (one timer for every engine). */
export const budgetClock = new BudgetClock();
