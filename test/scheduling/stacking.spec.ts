import { Injectable, Module } from '@nestjs/common';
import { Cron, Interval, ScheduleModule, SchedulerRegistry, Timeout } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  DistributedLockModule,
  LeaderOnly,
  LockedJob,
  LockService,
  MemoryLockBackend,
} from '../../lib';
import { eventually } from '../support/eventually';

/**
 * @LockedJob stacked with @Cron / @Interval / @Timeout in either order: the scheduler registers
 * the job, and what it calls runs under the lock (a second concurrent fire is skipped).
 */
@Injectable()
class Jobs {
  running = 0;
  runs: Record<string, number> = { cronAbove: 0, cronBelow: 0, interval: 0, timeout: 0 };
  private gate?: Promise<void>;
  open?: () => void;

  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }

  private async work(name: string): Promise<void> {
    this.runs[name]++;
    await this.gate;
  }

  @Cron('0 0 1 1 *', { name: 'cronAbove' })
  @LockedJob('cron-above', { minHold: 1 })
  cronAbove(): Promise<void> {
    return this.work('cronAbove');
  }

  @LockedJob('cron-below', { minHold: 1 })
  @Cron('0 0 1 1 *', { name: 'cronBelow' })
  cronBelow(): Promise<void> {
    return this.work('cronBelow');
  }

  @Interval('interval', 3_600_000)
  @LockedJob('interval', { minHold: 1 })
  interval(): Promise<void> {
    return this.work('interval');
  }

  @LockedJob('timeout', { minHold: 1 })
  @Timeout('timeout', 3_600_000)
  timeout(): Promise<void> {
    return this.work('timeout');
  }

  leaderRuns = 0;

  @LeaderOnly('stacking-leader')
  @Interval('leader', 3_600_000)
  async leaderWork(): Promise<string> {
    this.leaderRuns++;
    return 'ran';
  }
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    DistributedLockModule.forRoot({ backend: new MemoryLockBackend() }),
  ],
  providers: [Jobs],
})
class AppModule {}

describe('@LockedJob and @LeaderOnly stacked with @nestjs/schedule decorators', () => {
  it('the scheduler registers each job, and concurrent fires run once', async () => {
    const app = (
      await Test.createTestingModule({ imports: [AppModule] }).compile()
    ).createNestApplication();
    await app.init();
    const registry = app.get(SchedulerRegistry);
    const jobs = app.get(Jobs);
    expect(registry.getCronJobs().has('cronAbove')).toBe(true);
    expect(registry.getCronJobs().has('cronBelow')).toBe(true);
    expect(registry.getIntervals()).toEqual(expect.arrayContaining(['interval', 'leader']));
    expect(registry.getTimeouts()).toContain('timeout');

    jobs.hold();
    for (const name of ['cronAbove', 'cronBelow'] as const) {
      const job = registry.getCronJob(name);
      void job.fireOnTick();
      void job.fireOnTick(); // a second fire while the first still runs: skipped by the lock
    }
    const pending = [jobs.interval(), jobs.interval(), jobs.timeout(), jobs.timeout()];
    await eventually(
      () =>
        jobs.runs.cronAbove === 1 &&
        jobs.runs.cronBelow === 1 &&
        jobs.runs.interval === 1 &&
        jobs.runs.timeout === 1,
    );
    jobs.open?.();
    await Promise.all(pending);
    expect(jobs.runs).toEqual({ cronAbove: 1, cronBelow: 1, interval: 1, timeout: 1 });

    // @LeaderOnly: the module campaigned at bootstrap; once leader, the method runs.
    const leadership = app.get(LockService).campaign('stacking-leader');
    await leadership.whenLeader();
    expect(await jobs.leaderWork()).toBe('ran');
    await app.close();
    expect(leadership.isLeader).toBe(false); // shutdown resigned the campaign
  });
});
