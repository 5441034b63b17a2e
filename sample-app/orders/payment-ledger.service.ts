import { ConflictException, Injectable } from '@nestjs/common';

/**
 * Stands in for the downstream system a lock protects (a payment provider, a database row). It
 * honours fencing: a write carrying a token lower than one it already accepted is refused, so a
 * holder that lost its lock (paused, partitioned) cannot overwrite a newer holder's work.
 */
@Injectable()
export class PaymentLedger {
  private readonly payments = new Map<number, { amount: number; token: bigint }[]>();
  private readonly highestToken = new Map<number, bigint>();

  record(orderId: number, amount: number, fencingToken: bigint): { paid: number; token: string } {
    const highest = this.highestToken.get(orderId) ?? 0n;
    if (fencingToken < highest)
      throw new ConflictException(
        `stale fencing token ${fencingToken} < ${highest} for order ${orderId}`,
      );
    this.highestToken.set(orderId, fencingToken);
    const list = this.payments.get(orderId) ?? [];
    list.push({ amount, token: fencingToken });
    this.payments.set(orderId, list);
    return { paid: list.reduce((s, p) => s + p.amount, 0), token: String(fencingToken) };
  }

  history(orderId: number) {
    return (this.payments.get(orderId) ?? []).map((p) => ({
      amount: p.amount,
      token: String(p.token),
    }));
  }
}
