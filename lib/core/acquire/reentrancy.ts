import { AsyncLocalStorage } from 'node:async_hooks';
import { ContextRoot } from './context-root';
import type { LockLease } from '../lease/lock-lease';

/** One owning call: a withLock callback, a @Locked method call, or runInScope's function. */
export interface ReentrancyScope {
  /** The nearest enclosing scope that was still open when this one began. */
  readonly parent: ReentrancyScope | undefined;
  /** The first lock this call owns (normally its only one: the lock it was opened for), by id. */
  firstId: string | undefined;
  first: LockLease | undefined;
  /** Any further locks it owns, by backend+key (made for the second). */
  more: Map<string, LockLease> | undefined;
  /**
   * false once the owning call has settled: code it left running (timers, stray promises) no longer
   * owns.
   */
  open: boolean;
  /**
   * true only while the call's synchronous start runs: the acquire made then is the call's own
   * lock.
   */
  claimable: boolean;
}

/**
 * Reentrancy, and precisely what counts as the same owner.
 *
 * An OWNER is one owning call: `withLock(key, fn)` (while fn runs), a `@Locked` method call (until
 * its Promise settles or its Observable is set up), or `runInScope(fn)` (until fn's result
 * settles). The lock an owning call is opened for (the acquire made synchronously at its start)
 * belongs to it. Code running inside that call's async context re-enters that lock, and the locks
 * of the calls enclosing it, while they are still running: nested withLock / @Locked / acquire of
 * the same key get the same grant and token and count holds.
 *
 * NOT the same owner, even in one async context:
 * - a plain `acquire()` / `tryAcquire()` made inside an owning call after its start: its handle is
 *   owned by the code that holds the handle, and is never re-entered by anyone else. So parallel
 *   branches of one call (Promise.all) never re-enter each other's locks, whatever the timing;
 * - a sibling owning call (another request, another branch's withLock): siblings never see each
 *   other's locks, only their ancestors';
 * - anything that runs after the owning call settled (a timer or promise it left behind): its
 *   scope is closed, so it re-enters nothing;
 * - the library's own callbacks (watchdog timers, loss listeners, backend sessions): the engine
 *   runs them outside every caller's context (see `detached`).
 */
export class ReentrancyScopes {
  private readonly storage = new AsyncLocalStorage<ReentrancyScope | undefined>();
  /** The context of the engine's construction: no caller's scope, whatever ran since. */
  private readonly root = new ContextRoot('nestjs-distributed-lock');
  /**
   * true once an owning call ran (run()). Until then no context holds a scope, so detached() need
   * not clear ours: and must not, because the first `storage.run` enables the storage's promise
   * hook for the whole process (every promise created afterwards, the Redis client's included,
   * costs about three times as much on Node 20). An app that only uses acquire/release never pays
   * it.
   */
  private used = false;

  /**
   * false until an owning call ran: until then no context holds a scope, nothing can be re-entered.
   */
  get active(): boolean {
    return this.used;
  }

  static id(backend: string, fullKey: string): string {
    return `${backend}\u0000${fullKey}`;
  }

  /** Runs fn as a new owning call; its scope closes when fn's result settles (or fn throws). */
  run<T>(fn: () => T): T {
    const scope: ReentrancyScope = {
      parent: this.nearestOpen(),
      firstId: undefined,
      first: undefined,
      more: undefined,
      open: true,
      claimable: true,
    };
    const close = () => {
      scope.open = false;
      scope.first = scope.more = undefined;
    };
    let result: T;
    this.used = true;
    try {
      result = this.storage.run(scope, fn);
    } catch (error) {
      close();
      throw error;
    } finally {
      scope.claimable = false;
    }
    if (result !== null && typeof (result as { then?: unknown })?.then === 'function') {
      (result as PromiseLike<unknown>).then(close, close);
    } else {
      close();
    }
    return result;
  }

  /**
   * Called synchronously at the start of an acquire: returns the current scope if this acquire is
   * its owning call's own (the first made during the call's synchronous start), else undefined.
   */
  claim(): ReentrancyScope | undefined {
    const scope = this.storage.getStore();
    if (!scope || !scope.open || !scope.claimable) return undefined;
    scope.claimable = false;
    return scope;
  }

  /**
   * The lease held for this key by the current owner or an owner enclosing it that is still
   * running.
   */
  find(id: string): LockLease | undefined {
    for (let s = this.storage.getStore(); s; s = s.parent) {
      if (!s.open) continue;
      const lease = s.firstId === id ? s.first : s.more?.get(id);
      if (lease?.state === 'held') return lease;
    }
    return undefined;
  }

  remember(scope: ReentrancyScope, id: string, lease: LockLease): void {
    if (!scope.open) return;
    if (scope.first === undefined || scope.firstId === id) {
      scope.firstId = id;
      scope.first = lease;
    } else (scope.more ??= new Map()).set(id, lease);
  }

  /**
   * Leases visible in the current context (for @CurrentLock / LockService.current), innermost last.
   */
  visible(): LockLease[] {
    const chain: ReentrancyScope[] = [];
    for (let s = this.storage.getStore(); s; s = s.parent) if (s.open) chain.unshift(s);
    const byId = new Map<string, LockLease>();
    for (const s of chain)
      for (const [id, lease] of owned(s)) if (lease.state === 'held') byId.set(id, lease);
    return [...byId.values()];
  }

  /**
   * Runs fn outside every caller's async context: in the context the engine was built in, with no
   * reentrancy scope. Timers, listeners and backend sessions started inside inherit that context,
   * so a callback of the library never runs "as" some request and never re-enters its locks.
   */
  detached<T>(fn: () => T): T {
    if (!this.used) return this.root.runInAsyncScope(fn) as T;
    return (this.outside ??= this.snapshotOutside())(fn);
  }

  /** detached(() => fn(arg)), without that closure (one per acquire on the hot path). */
  detachedWith<A, T>(fn: (arg: A) => T, arg: A): T {
    if (!this.used) return this.root.runInAsyncScope(fn, undefined, arg) as T;
    return (this.outside ??= this.snapshotOutside())(fn, arg);
  }

  /**
   * Runs a function in the root's context with no scope: a snapshot taken there once, so entering
   * it switches to a context made once instead of making one per call. run(undefined), not exit():
   * on Node 20 exit() disables the storage while it runs, turning the process-wide promise hooks
   * off and on again. (Skipping the switch when getStore() is already undefined is NOT
   * equivalent: the reentrancy spec "request B's loss listener never runs in request A's scope"
   * fails that way.)
   */
  private outside?: <A extends unknown[], T>(fn: (...args: A) => T, ...args: A) => T;

  private snapshotOutside(): NonNullable<ReentrancyScopes['outside']> {
    return this.root.runInAsyncScope(() =>
      this.storage.run(undefined, () => AsyncLocalStorage.snapshot()),
    );
  }

  private nearestOpen(): ReentrancyScope | undefined {
    let s = this.storage.getStore();
    while (s && !s.open) s = s.parent;
    return s;
  }
}

/** The locks `scope` owns, as [id, lease] pairs. */
function owned(scope: ReentrancyScope): [string, LockLease][] {
  const pairs: [string, LockLease][] = [];
  if (scope.first !== undefined) pairs.push([scope.firstId!, scope.first]);
  if (scope.more) pairs.push(...scope.more);
  return pairs;
}
