import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { LeaderOnly } from '../../lib';

/**
 * A leader-only worker: every instance campaigns for leadership of 'outbox' at start-up; only the
 * leader drains the outbox each second. When the leader dies (or is paused past the election's
 * ttl) another instance takes over within about one ttl. GET /jobs/outbox shows this instance's view.
 */
@Injectable()
export class OutboxWorker {
  private readonly logger = new Logger(OutboxWorker.name);
  drained = 0;

  @LeaderOnly('outbox', { ttl: 5_000 })
  @Interval('outbox', 1_000)
  async drain(): Promise<void> {
    this.drained++;
    if (this.drained % 60 === 1)
      this.logger.log(`outbox drained ${this.drained} times on this instance (leader)`);
  }
}
