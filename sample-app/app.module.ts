import {
  Injectable,
  Module,
  type CanActivate,
  type ExecutionContext,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { DistributedLockModule } from '../lib';
import { DistributedLockLiveViewModule } from '../lib/operations';
import { AccountsController } from './accounts/accounts.controller';
import { ExportsController } from './exports/exports.controller';
import { InventoryController } from './inventory/inventory.controller';
import { JobsController } from './jobs/jobs.controller';
import { OutboxWorker } from './jobs/outbox.worker';
import { ReportJob } from './jobs/report.job';
import { createLockBackend } from './lock-backend.factory';
import { OrdersController } from './orders/orders.controller';
import { OrdersService } from './orders/orders.service';
import { PaymentLedger } from './orders/payment-ledger.service';

const selected = createLockBackend();

/** The live view shows lock keys: this demo serves it to loopback clients only. Use your own auth guard. */
@Injectable()
export class LoopbackOnlyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const address =
      context.switchToHttp().getRequest<{ socket?: { remoteAddress?: string } }>().socket
        ?.remoteAddress ?? '';
    return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
  }
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    DistributedLockModule.forRootAsync({
      useFactory: () => ({
        backend: selected.backend,
        keyPrefix: process.env.LOCK_PREFIX ?? 'sample:',
        defaults: { ttl: 10_000, wait: 5_000 },
      }),
    }),
    // Opt-in page of held locks, waiters and recent events, live over SSE: GET /locks/live
    DistributedLockLiveViewModule.register({ path: 'locks/live', guard: LoopbackOnlyGuard }),
  ],
  controllers: [
    OrdersController,
    InventoryController,
    JobsController,
    AccountsController,
    ExportsController,
  ],
  providers: [OrdersService, PaymentLedger, ReportJob, OutboxWorker],
})
export class AppModule implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await selected.close();
  }
}
