import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockLease } from './lock-lease';

/**
 * Reentrancy per async context. A scope (opened by withLock, a @Locked method or runInLockScope)
 * maps backend+key to the lease held in it. Nested scopes copy their parent's map, so a child sees
 * the locks of its ancestors but siblings never see each other's: two concurrent requests are two
 * owners even in one process.
 */
export class ReentrancyScopes {
  private readonly storage = new AsyncLocalStorage<Map<string, LockLease>>();

  static id(backend: string, fullKey: string): string {
    return `${backend}\u0000${fullKey}`;
  }

  run<T>(fn: () => T): T {
    const parent = this.storage.getStore();
    return this.storage.run(new Map(parent), fn);
  }

  /** The lease held for this key in the current context, if it is still held. */
  find(id: string): LockLease | undefined {
    const lease = this.storage.getStore()?.get(id);
    return lease?.state === 'held' ? lease : undefined;
  }

  remember(id: string, lease: LockLease): void {
    this.storage.getStore()?.set(id, lease);
  }

  /** Leases visible in the current context (for @CurrentLock / LockService.current). */
  visible(): LockLease[] {
    return [...(this.storage.getStore()?.values() ?? [])].filter((l) => l.state === 'held');
  }
}
