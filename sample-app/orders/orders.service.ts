import { BadRequestException, Injectable } from '@nestjs/common';
import { CurrentLock, KeyParam, LockHandle, Locked } from '../../lib';
import { PaymentLedger } from './payment-ledger.service';

@Injectable()
export class OrdersService {
  private readonly paidOnce = new Set<number>();

  constructor(private readonly ledger: PaymentLedger) {}

  /**
   * Idempotent payment: the check-then-act below is only safe because no two callers run it for
   * the same order at once. Called from the locked controller it re-enters the same lock.
   * @KeyParam names the value explicitly, so the template still works after a minifying bundler
   * renames `orderId`.
   */
  @Locked('order:<orderId:int>', { ttl: 5_000, wait: 3_000 })
  async pay(
    @KeyParam('orderId') orderId: number,
    amount: number,
    @CurrentLock() lock?: LockHandle,
  ) {
    if (!Number.isFinite(amount) || amount <= 0)
      throw new BadRequestException('amount must be a positive number');
    if (this.paidOnce.has(orderId))
      return { orderId, status: 'already-paid', history: this.ledger.history(orderId) };
    await new Promise((r) => setTimeout(r, 50)); // the call to the payment provider
    lock?.throwIfLost(); // never write after losing the lock
    const result = this.ledger.record(orderId, amount, (lock as LockHandle).fencingToken);
    this.paidOnce.add(orderId);
    return { orderId, status: 'paid', ...result };
  }
}
