import { Module, type OnApplicationShutdown } from '@nestjs/common';
import { DistributedLockModule } from '../lib';
import { InventoryController } from './inventory/inventory.controller';
import { JobsController } from './jobs/jobs.controller';
import { ReportJob } from './jobs/report.job';
import { createLockBackend } from './lock-backend.factory';
import { OrdersController } from './orders/orders.controller';
import { OrdersService } from './orders/orders.service';
import { PaymentLedger } from './orders/payment-ledger.service';

const selected = createLockBackend();

@Module({
  imports: [
    DistributedLockModule.forRootAsync({
      useFactory: () => ({
        backend: selected.backend,
        keyPrefix: process.env.LOCK_PREFIX ?? 'sample:',
        defaults: { ttl: 10_000, wait: 5_000 },
      }),
    }),
  ],
  controllers: [OrdersController, InventoryController, JobsController],
  providers: [OrdersService, PaymentLedger, ReportJob],
})
export class AppModule implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await selected.close();
  }
}
