import { SteadyMap } from '../../backend-kit/steady-collections';
import type { BackendLock } from '../../interfaces/lock-backend.interface';

/** A grant handed to a waiter of this process: its fencing token (decimal string). */
type Deliver = (token: string) => void;

/**
 * The local end of direct handoff: every waiter of this backend listens on ONE per-process channel
 * ("owner|token" messages) and this table routes a message to the waiter whose owner it names, so
 * a release wakes exactly the waiter it granted. A grant for an owner that no longer waits here
 * (it gave up, and its "leave" did not reach the server) is given back at once through `giveBack`.
 */
export class RedisHandoffs {
  private readonly waiting = new SteadyMap<string, Deliver>();
  /** Waiters that gave up while their leave may not have reached the server: owner -> lock. */
  private readonly abandoned = new Map<string, BackendLock>();

  constructor(private readonly giveBack: (lock: BackendLock) => void) {}

  /** Registers `owner`: `deliver(token)` on a grant, `deliver('')` when it should re-check. Returns the unregister function. */
  expect(owner: string, deliver: Deliver): () => void {
    this.waiting.set(owner, deliver);
    return () => {
      if (this.waiting.get(owner) === deliver) this.waiting.delete(owner);
    };
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
    const deliver = this.waiting.get(owner);
    if (deliver) return deliver(token);
    const lock = this.abandoned.get(owner);
    if (lock) {
      this.abandoned.delete(owner);
      this.giveBack(lock);
    }
  }

  /** After a reconnect (messages may be lost): every waiter re-checks on the server. */
  recheckAll(): void {
    for (const deliver of [...this.waiting.values()]) deliver('');
  }

  get size(): number {
    return this.waiting.size;
  }
}
