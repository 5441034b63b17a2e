/**
 * The deadlines of the engine's backend calls (callBackend) on ONE timer per process instead of a
 * setTimeout/clearTimeout pair per call: a call adds its budget and deletes it when it answers; the
 * timer is armed for the earliest budget and, when it fires, fails every budget that is due and
 * re-arms for the next. An uncontended cycle (acquire + release, each answering long before its
 * budget) thus creates no timer: the one armed stays armed, held (ref) only while a call is pending
 * so an idle process can still exit. Same bound as a timer per call: a budget fails at its due time
 * (or up to one timer tick later, as setTimeout would).
 *
 * The pending budgets are a doubly linked list through the budgets themselves: adding and deleting
 * allocate nothing (a Set would give every call object an identity hash and rebuild its table
 * every few adds, as deletes leave holes).
 */
import { AsyncResource } from 'node:async_hooks';

export interface Budget {
  /** performance.now() at which the call is out of budget. */
  readonly at: number;
  /** Called once, when `at` passes while the budget is still pending. */
  readonly expire: () => void;
  /** The clock's links (undefined while not pending); only the clock sets them. */
  prevBudget: Budget | undefined;
  nextBudget: Budget | undefined;
}

class BudgetClock {
  /** A sentinel: pending budgets are the ring after it. */
  private readonly head: Budget = {
    at: Infinity,
    expire: () => undefined,
    prevBudget: undefined,
    nextBudget: undefined,
  };
  private size = 0;
  private timer?: ReturnType<typeof setTimeout>;
  private armedAt = Infinity;
  // The timer's callback runs in the context of the module's load, never in one caller's
  // (AsyncLocalStorage: a request's reentrancy scope must not leak into another call's expiry).
  private readonly scope = new AsyncResource('DistributedLockBudgetClock');

  constructor() {
    this.head.prevBudget = this.head;
    this.head.nextBudget = this.head;
  }

  add(budget: Budget): void {
    if (budget.nextBudget !== undefined) return;
    const last = this.head.prevBudget as Budget;
    budget.prevBudget = last;
    budget.nextBudget = this.head;
    last.nextBudget = budget;
    this.head.prevBudget = budget;
    this.size++;
    if (budget.at < this.armedAt) this.arm(budget.at);
    else if (this.size === 1) this.timer?.ref();
  }

  delete(budget: Budget): void {
    if (this.unlink(budget) && this.size === 0) this.timer?.unref();
  }

  private unlink(budget: Budget): boolean {
    const prev = budget.prevBudget;
    const next = budget.nextBudget;
    if (prev === undefined || next === undefined) return false;
    prev.nextBudget = next;
    next.prevBudget = prev;
    budget.prevBudget = undefined;
    budget.nextBudget = undefined;
    this.size--;
    return true;
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
    for (let b = this.head.nextBudget as Budget; b !== this.head; b = b.nextBudget as Budget) {
      if (b.at <= now) due.push(b);
      else if (b.at < next) next = b.at;
    }
    for (const budget of due) this.unlink(budget);
    if (next < Infinity) this.arm(next);
    for (const budget of due) budget.expire();
  };
}

/** The process's budget clock (one timer for every engine). */
export const budgetClock = new BudgetClock();
