import { SteadyMap } from '../../backend-kit/steady-collections';
import type { BackendLock } from '../../interfaces/lock-backend.interface';

/** A waiter of this process: `deliver(token)` on a grant (fencing token, decimal string), `deliver('')` to re-check. */
export interface HandoffWaiter {
  deliver(token: string): void;
}

/**
 * The local end of direct handoff: every waiter of this backend listens on ONE per-process channel
 * ("owner|token" messages) and this table routes a message to the waiter whose owner it names, so
 * a release wakes exactly the waiter it granted. A grant for an owner that no longer waits here
 * (it gave up, and its "leave" did not reach the server) is given back at once through `giveBack`.
 */
export class RedisHandoffs {
  private readonly waiting = new SteadyMap<string, HandoffWaiter>();
  /** Waiters that gave up while their leave may not have reached the server: owner -> lock. */
  private readonly abandoned = new Map<string, BackendLock>();

  constructor(private readonly giveBack: (lock: BackendLock) => void) {}

  /** Registers `owner`: `waiter.deliver(token)` on a grant, `deliver('')` when it should re-check. */
  expect(owner: string, waiter: HandoffWaiter): void {
    this.waiting.set(owner, waiter);
  }

  /** Unregisters `owner` if `waiter` is still the one registered for it (an object, not a closure per wait). */
  forget(owner: string, waiter: HandoffWaiter): void {
    if (this.waiting.get(owner) === waiter) this.waiting.delete(owner);
  }

  /** Remembers a waiter whose leave failed, so a late grant for it is given back. */
  abandon(lock: BackendLock, forMs: number): void {
    this.abandoned.set(lock.owner, lock);
    setTimeout(() => this.abandoned.delete(lock.owner), forMs).unref();
  }

  onMessage(message: string): void {
    const at = message.lastIndexOf('|');
    if (at < 0) return;
    const owner = message.slice(0, at);
    const token = message.slice(at + 1);
    const waiter = this.waiting.get(owner);
    if (waiter) return waiter.deliver(token);
    const lock = this.abandoned.get(owner);
    if (lock) {
      this.abandoned.delete(owner);
      this.giveBack(lock);
    }
  }

  /** After a reconnect (messages may be lost): every waiter re-checks on the server. */
  recheckAll(): void {
    for (const waiter of [...this.waiting.values()]) waiter.deliver('');
  }

  get size(): number {
    return this.waiting.size;
  }
}
