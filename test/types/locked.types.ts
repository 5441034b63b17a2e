/**
 * Type tests for @Locked, compiled by `npm run typecheck` (tsc over test/): every
 * `@ts-expect-error` below must be an error, or tsc fails with "Unused '@ts-expect-error'".
 * Nothing here runs.
 */
import { Observable, of } from 'rxjs';
import { Locked } from '../../lib';
import type { LockedNeedsAsync } from '../../lib/decorators/locked.decorator';

export class Allowed {
  @Locked('order:<id>')
  async pay(id: string): Promise<number> {
    return id.length;
  }

  @Locked('stream:<id>')
  stream(id: string): Observable<string> {
    return of(id);
  }

  /** A key function whose parameters match the method's (a prefix of them). */
  @Locked((id: string) => `order:${id}`)
  async withKeyFunction(id: string, amount: number): Promise<number> {
    return amount + id.length;
  }

  @Locked((dto: { customer: { id: string } }) => `customer:${dto.customer.id}`)
  async byDto(dto: { customer: { id: string } }): Promise<string> {
    return dto.customer.id;
  }
}

export class Rejected {
  // @ts-expect-error a synchronous method would silently start returning a Promise
  @Locked('order:<id>')
  sync(id: string): number {
    return id.length;
  }

  // @ts-expect-error void is neither a Promise nor an Observable
  @Locked('job:nightly')
  fireAndForget(): void {}

  // @ts-expect-error the key function takes a number, the method's first parameter is a string
  @Locked((id: number) => `order:${id}`)
  async wrongKeyType(id: string): Promise<string> {
    return id;
  }
}

/**
 * Issue 34.12: on a synchronous method the compiler said TS1241/TS1270 about `LockedResult`; it now
 * says that a property of this name is missing, i.e. what to do (test/types/locked-sync.spec.ts
 * checks the compiler's own text).
 */
export const syncMethodMessage: keyof LockedNeedsAsync =
  '@Locked needs a method that returns a Promise or an Observable: make it async';

export async function tryAcquireTypes(locks: import('../../lib').LockService): Promise<void> {
  const handle = await locks.tryAcquire('k');
  // @ts-expect-error tryAcquire may return null when the lock is busy
  handle.release();
}
