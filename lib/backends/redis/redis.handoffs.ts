import { sleepFor } from '../../backend-kit';
import type { BackendLock, ReleaseListener } from '../../interfaces/lock-backend.interface';

/**
 * A waiter of this process: `deliver(token)` on a message naming it, `deliver('')` to re-check.
 * Either only wakes it: anyone who can PUBLISH can send a message, so the waiter confirms on the
 * server (its next attempt, a re-check) and never takes the message's token.
 */
export interface HandoffWaiter {
  deliver(token: string): void;
}

/**
 * A queued request's wake (the busy answer's `wake`, LockBackend contract): the engine waits on it
 * between attempts, and a handoff or a re-check message ends that wait. Registered under the
 * request's owner from its first attempt that may have queued it until its grant or its leave.
 */
export class QueuedWaiter implements HandoffWaiter, ReleaseListener {
  /**
   * A message (a handoff or a re-check) came since the last attempt began: the next wait returns
   * at once. Kept however the message came, so one that comes between an attempt and the wait that
   * follows it (a re-check when our channel goes live during our first attempt) is not lost.
   */
  news = false;
  private wake: (() => void) | undefined = undefined;

  constructor(
    /** performance.now() when the wait's deadline passes: the queue entry's own deadline. */
    readonly deadline: number,
  ) {}

  /** A message's token is not read: a message is a reason to re-check, never a grant. */
  deliver(): void {
    this.news = true;
    this.wake?.();
  }

  /** Sleeps `ms`, until the signal aborts, or until a handoff or a re-check message wakes us. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.news) return Promise.resolve();
    return sleepFor(ms, signal, (wake) => (this.wake = wake));
  }

  /** Nothing: the registration ends at the grant or in leave, not when the engine stops waiting. */
  dispose(): void {}
}

/**
 * The local end of direct handoff: every waiter of this backend listens on ONE per-process channel
 * ("owner|token" messages) and this table routes a message to the waiter whose owner it names, so
 * a release wakes exactly the waiter it granted. A grant for an owner that no longer waits here
 * (it gave up, and its "leave" did not reach the server) is given back at once through `giveBack`.
 *
 * A waiter registers only once its first attempt answered that it is queued (an uncontended grant
 * never registers: redis.grants.ts). A handoff can come before that: the release script may
 * run between our queueing and our reading of the reply, and the message arrives on another
 * connection. Such a message is kept (`early`) and delivered when the owner registers, which it
 * does within the same turn of the event loop as reading that reply; a message nobody claims is
 * dropped after EARLY_MS, as a message for no waiter was before.
 */
/** How long a handoff waits for its waiter to register (see RedisHandoffs). */
const EARLY_MS = 10_000;

export class RedisHandoffs {
  private readonly waiting = new Map<string, HandoffWaiter>();
  /** Handoffs that came before their waiter registered: owner -> [token, performance.now()]. */
  private readonly early = new Map<string, [string, number]>();
  /**
   * Waiters that gave up while their leave may not have reached the server: owner -> the lock and
   * how to give a grant of it back.
   */
  private readonly abandoned = new Map<string, [BackendLock, (lock: BackendLock) => void]>();

  constructor(private readonly giveBack: (lock: BackendLock) => void) {}

  /**
   * Registers `owner`: `waiter.deliver(token)` on a grant, `deliver('')` when it should re-check.
   */
  expect(owner: string, waiter: HandoffWaiter): void {
    this.waiting.set(owner, waiter);
    if (this.early.size === 0) return;
    const early = this.early.get(owner);
    if (early === undefined) return;
    this.early.delete(owner);
    waiter.deliver(early[0]);
  }

  /** The waiter registered for `owner`, if any. */
  waiter(owner: string): HandoffWaiter | undefined {
    return this.waiting.size === 0 ? undefined : this.waiting.get(owner);
  }

  /** Unregisters `owner`: true when a waiter was registered for it. */
  forget(owner: string): boolean {
    return this.waiting.size > 0 && this.waiting.delete(owner);
  }

  /**
   * Remembers a waiter whose leave failed, so a late grant for it is given back: by `giveBack`
   * (the waiter's own leave: a permit is not given back as a lock), else the table's.
   */
  abandon(lock: BackendLock, forMs: number, giveBack = this.giveBack): void {
    this.abandoned.set(lock.owner, [lock, giveBack]);
    setTimeout(() => this.abandoned.delete(lock.owner), forMs).unref();
  }

  onMessage(message: string): void {
    const at = message.lastIndexOf('|');
    if (at < 0) return;
    const owner = message.slice(0, at);
    const token = message.slice(at + 1);
    const waiter = this.waiting.get(owner);
    if (waiter) return waiter.deliver(token);
    const abandoned = this.abandoned.get(owner);
    if (abandoned) {
      this.abandoned.delete(owner);
      return abandoned[1](abandoned[0]);
    }
    if (!token) return; // a re-check for nobody
    // Before its waiter registered (see the class comment). Stale entries go first: a message
    // nobody claimed in EARLY_MS never will be (its waiter would have registered by then).
    const now = performance.now();
    if (this.early.size > 0)
      for (const [o, [, at]] of this.early) if (now - at > EARLY_MS) this.early.delete(o);
    this.early.set(owner, [token, now]);
  }

  /** After a reconnect (messages may be lost): every waiter re-checks on the server. */
  recheckAll(): void {
    for (const waiter of [...this.waiting.values()]) waiter.deliver('');
  }

  get size(): number {
    return this.waiting.size;
  }
}
