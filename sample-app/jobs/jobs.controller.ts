import { Controller, Get, Param, ParseIntPipe, Post } from '@nestjs/common';
import { LockService } from '../../lib';
import { OutboxWorker } from './outbox.worker';
import { ReportJob } from './report.job';

@Controller('jobs')
export class JobsController {
  constructor(
    private readonly report: ReportJob,
    private readonly outbox: OutboxWorker,
    private readonly locks: LockService,
  ) {}

  /** Runs the report now (skipped, with an empty answer, if it is already running somewhere). */
  @Post('report/:steps')
  async run(@Param('steps', ParseIntPipe) steps: number) {
    return (await this.report.run(steps)) ?? { skipped: true };
  }

  /** This instance's view of the leader-only outbox worker. */
  @Get('outbox')
  outboxStatus() {
    const leadership = this.locks.campaign('outbox', { ttl: 5_000 });
    return {
      leader: leadership.isLeader,
      term: leadership.term?.fencingToken.toString(),
      drained: this.outbox.drained,
    };
  }
}
