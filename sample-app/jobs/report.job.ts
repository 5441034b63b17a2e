import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { CurrentLock, LockHandle, Locked, LockedJob } from '../../lib';

/**
 * A report that must run on one instance at a time across the fleet. Its ttl (2 s) is shorter
 * than the work (about 5 s): the watchdog renews the lock while it runs. `run` can be called on
 * demand (POST /jobs/report/:steps; busy elsewhere = skipped). The scheduled variant fires on
 * every instance's @Cron (set REPORT_CRON, e.g. '0 * * * * *'); @LockedJob makes one instance run
 * each tick, and minHold keeps a late instance (clock skew up to 5 s) from running it again.
 */
@Injectable()
export class ReportJob {
  private readonly logger = new Logger(ReportJob.name);
  runs = 0;
  lastSteps = 0;

  @Cron(process.env.REPORT_CRON ?? '0 0 * * * *', {
    name: 'report',
    disabled: !process.env.REPORT_CRON,
  })
  @LockedJob('nightly-report-scheduled', { minHold: 5_000, maxHold: 60_000, ttl: 2_000 })
  async scheduled(): Promise<void> {
    const { steps } = await this.work(5, undefined);
    this.logger.log(`scheduled report: ${steps} steps`);
  }

  @Locked('job:nightly-report', { ttl: 2_000, onBusy: 'skip' })
  async run(
    steps: number,
    @CurrentLock() lock?: LockHandle,
  ): Promise<{ steps: number; token: string }> {
    return this.work(steps, lock);
  }

  private async work(
    steps: number,
    lock: LockHandle | undefined,
  ): Promise<{ steps: number; token: string }> {
    const handle = lock;
    this.runs++;
    let done = 0;
    for (; done < steps; done++) {
      if (handle?.signal.aborted) break; // lost: stop before the next step
      await new Promise((r) => setTimeout(r, 1_000));
    }
    this.lastSteps = done;
    this.logger.log(
      `report: ${done}/${steps} steps under token ${handle?.fencingToken ?? '(scheduled)'}`,
    );
    return { steps: done, token: String(handle?.fencingToken ?? '') };
  }
}
