import { Module, type OnApplicationShutdown } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { DistributedLockModule } from '../lib';
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
  ],
  controllers: [OrdersController, InventoryController, JobsController, AccountsController, ExportsController],
  providers: [OrdersService, PaymentLedger, ReportJob, OutboxWorker],
})
export class AppModule implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await selected.close();
  }
}
