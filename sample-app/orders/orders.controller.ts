import { Body, Controller, Get, Param, ParseIntPipe, Post } from '@nestjs/common';
import { Locked } from '../../lib';
import { OrdersService } from './orders.service';
import { PaymentLedger } from './payment-ledger.service';

@Controller('orders')
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly ledger: PaymentLedger,
  ) {}

  /**
   * Concurrent double-clicks on "pay" for one order run one after another; other orders in parallel.
   * ParseIntPipe and the typed placeholder make `/orders/1`, `/01`, `/1.0` and `/%201` one order and
   * one lock (or a 400), never four locks that would pay order 1 four times.
   */
  @Post(':id/pay')
  @Locked('order:<id:int>', { ttl: 5_000, wait: 3_000 })
  pay(@Param('id', ParseIntPipe) id: number, @Body() body: { amount?: number }) {
    return this.orders.pay(id, Number(body?.amount ?? 10));
  }

  /** A second click while the first is still running answers 409 at once instead of waiting. */
  @Post(':id/pay-now')
  @Locked('order:<id:int>', { onBusy: 'fail' })
  payNow(@Param('id', ParseIntPipe) id: number, @Body() body: { amount?: number }) {
    return this.orders.pay(id, Number(body?.amount ?? 10));
  }

  @Get(':id')
  get(@Param('id', ParseIntPipe) id: number) {
    return { orderId: id, history: this.ledger.history(id) };
  }
}
