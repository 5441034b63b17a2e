import { Controller, Param, ParseIntPipe, Post } from '@nestjs/common';
import { ReportJob } from './report.job';

@Controller('jobs')
export class JobsController {
  constructor(private readonly report: ReportJob) {}

  /** Runs the report now (skipped, with an empty answer, if it is already running somewhere). */
  @Post('report/:steps')
  async run(@Param('steps', ParseIntPipe) steps: number) {
    return (await this.report.run(steps)) ?? { skipped: true };
  }
}
