import {
  Body,
  Controller,
  Get,
  HttpCode,
  Injectable,
  Param,
  Post,
  Query,
  SetMetadata,
  Sse,
  type MessageEvent,
} from '@nestjs/common';
import { interval, map, take, type Observable } from 'rxjs';
import { CurrentLock, LockHandle, Locked, LockService } from '../../lib';

/** A deliberately racy store: read -> yield -> write, so any overlap loses updates. */
@Injectable()
export class Ledger {
  readonly counters = new Map<string, number>();
  active = 0;
  maxActive = 0;
  activeById = new Map<string, number>();

  async bump(id: string, holdMs = 2): Promise<number> {
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    this.activeById.set(id, (this.activeById.get(id) ?? 0) + 1);
    try {
      const read = this.counters.get(id) ?? 0;
      await new Promise((r) => setTimeout(r, holdMs));
      this.counters.set(id, read + 1);
      return read + 1;
    } finally {
      this.active--;
      this.activeById.set(id, (this.activeById.get(id) ?? 1) - 1);
    }
  }

  /** Resolves once `n` handlers are inside at the same time (proves parallelism without timing). */
  rendezvous = new Map<string, { n: number; waiters: (() => void)[] }>();
  async meet(group: string, n: number): Promise<void> {
    const g = this.rendezvous.get(group) ?? { n: 0, waiters: [] };
    this.rendezvous.set(group, g);
    g.n++;
    if (g.n >= n) {
      g.waiters.forEach((w) => w());
      return;
    }
    await new Promise<void>((r) => g.waiters.push(r));
  }
}

@Injectable()
export class PaymentService {
  constructor(private readonly ledger: Ledger) {}

  /** Same key as the controller: called from a locked handler it must re-enter, not deadlock. */
  @Locked('order:<orderId>')
  async capture(orderId: string, @CurrentLock() lock?: LockHandle): Promise<{ token: string }> {
    await this.ledger.bump(`capture:${orderId}`, 1);
    return { token: String(lock?.fencingToken) };
  }
}

export const ROUTE_TAG = 'test:route-tag';

@Controller('orders')
export class OrdersController {
  static released = new Map<string, boolean>();
  constructor(
    private readonly ledger: Ledger,
    private readonly payments: PaymentService,
    private readonly locks: LockService,
  ) {}

  @Post(':id/pay')
  @Locked('order:<id>', { wait: 20_000 })
  async pay(@Param('id') id: string): Promise<{ count: number }> {
    return { count: await this.ledger.bump(id) };
  }

  @Locked('meet:<id>', { wait: 5_000 })
  @Post(':id/meet')
  @HttpCode(202)
  @SetMetadata(ROUTE_TAG, 'meet')
  async meet(@Param('id') id: string, @Query('n') n: string): Promise<{ met: boolean }> {
    await this.ledger.meet('meet', Number(n));
    return { met: true };
  }

  @Post(':id/fail-fast')
  @Locked('order:<id>', { onBusy: 'fail' })
  async failFast(@Param('id') id: string): Promise<{ ok: boolean }> {
    return { ok: !!id };
  }

  @Post(':id/skip')
  @Locked('order:<id>', { onBusy: 'skip' })
  async skip(@Param('id') id: string): Promise<{ ran: boolean }> {
    return { ran: !!id };
  }

  @Post('by-body')
  @Locked('customer:<dto.customer.id>')
  async byBody(@Body() dto: { customer?: { id?: unknown } }): Promise<{ ok: boolean }> {
    return { ok: !!dto };
  }

  @Post(':id/slow')
  @Locked('order:<id>', { ttl: 300 })
  async slow(
    @Param('id') id: string,
    @Query('ms') ms: string,
    @CurrentLock() lock: LockHandle,
  ): Promise<{ held: boolean; token: string }> {
    await new Promise((r) => setTimeout(r, Number(ms))); // the handler's own work, outliving its ttl
    return { held: lock.held, token: String(lock.fencingToken) };
  }

  @Post(':id/hang')
  @Locked('order:<id>', { ttl: 300 })
  async hang(@Param('id') id: string, @CurrentLock() lock: LockHandle): Promise<never> {
    OrdersController.released.set(id, false);
    lock.signal.addEventListener('abort', () => OrdersController.released.set(id, true));
    return new Promise<never>(() => undefined);
  }

  @Post(':id/capture')
  @Locked('order:<id>', { wait: 1_000 })
  async capture(
    @Param('id') id: string,
    @CurrentLock() lock: LockHandle,
  ): Promise<{ outer: string; inner: string }> {
    const inner = await this.payments.capture(id);
    return { outer: String(lock.fencingToken), inner: inner.token };
  }

  @Sse(':id/stream')
  @Locked('stream:<id>')
  stream(@Param('id') id: string): Observable<MessageEvent> {
    return interval(20).pipe(
      take(5),
      map((i) => ({ data: { id, i, held: this.locks.current() === undefined ? 'n/a' : 'yes' } })),
    );
  }

  @Get(':id/stream-async')
  @Locked('stream:<id>')
  async streamAsync(@Param('id') id: string): Promise<Observable<{ id: string; i: number }>> {
    return interval(20).pipe(
      take(5),
      map((i) => ({ id, i })),
    );
  }
}
