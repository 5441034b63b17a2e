import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { Locked } from '../../lib';
import { OrdersService } from './orders.service';
import { PaymentLedger } from './payment-ledger.service';

@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService, private readonly ledger: PaymentLedger) {}

  /** Concurrent double-clicks on "pay" for one order run one after another; other orders in parallel. */
  @Post(':id/pay')
  @Locked('order:<id>', { ttl: 5_000, wait: 3_000 })
  pay(@Param('id') id: string, @Body() body: { amount?: number }) {
    return this.orders.pay(id, Number(body?.amount ?? 10));
  }

  /** A second click while the first is still running answers 409 at once instead of waiting. */
  @Post(':id/pay-now')
  @Locked('order:<id>', { onBusy: 'fail' })
  payNow(@Param('id') id: string, @Body() body: { amount?: number }) {
    return this.orders.pay(id, Number(body?.amount ?? 10));
  }

  @Get(':id')
  get(@Param('id') id: string) {
    return { orderId: id, history: this.ledger.history(id) };
  }
}
