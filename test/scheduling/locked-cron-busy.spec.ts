import { Injectable, Module, type LoggerService } from '@nestjs/common';
import { Cron, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { DistributedLockModule, Locked, LockService, MemoryLockBackend } from '../../lib';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockEvent } from '../../lib/core/activity/lock-events';
import { eventually } from '../support/eventually';

/**
 * @Locked with the default onBusy 'wait' on a @Cron method: a tick that finds the lock held by
 * another instance is not an ERROR with a stack from the scheduler, and start-up says once which
 * decorator fits a scheduled job.
 */
class CapturingLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];
  log(message: unknown) {
    this.lines.push({ level: 'log', message: String(message) });
  }
  error(message: unknown) {
    this.lines.push({ level: 'error', message: String(message) });
  }
  warn(message: unknown) {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  debug() {}
  verbose() {}
}

@Injectable()
class Reports {
  runs = 0;

  @Cron('0 0 1 1 *', { name: 'nightly' })
  @Locked('report:nightly', { wait: 20 })
  async nightly(): Promise<void> {
    this.runs++;
  }
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    DistributedLockModule.forRoot({ backend: new MemoryLockBackend() }),
  ],
  providers: [Reports],
})
class AppModule {}

describe('@Locked (onBusy wait) on a @Cron method', () => {
  it('a losing tick is skipped without an ERROR, and start-up suggests @LockedJob or onBusy skip', async () => {
    const logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .setLogger(logger)
      .compile();
    const app = moduleRef.createNestApplication({ logger });
    await app.init();
    const events: LockEvent[] = [];
    const stop = app.get(LockEngine).events.on((e) => void events.push(e));
    try {
      const warning = logger.lines.filter((l) => l.message.includes('@LockedJob'));
      expect(warning).toEqual([
        {
          level: 'warn',
          message: expect.stringContaining(
            "Reports.nightly() is scheduled (@Cron/@Interval/@Timeout) and @Locked with onBusy 'wait'",
          ),
        },
      ]);
      // Another instance holds the job's lock for the whole tick.
      const held = await app.get(LockService).acquire('report:nightly');
      void app.get(SchedulerRegistry).getCronJob('nightly').fireOnTick();
      await eventually(
        () =>
          events.some((e) => e.type === 'skipped') || logger.lines.some((l) => l.level === 'error'),
      );
      await held.release();
      expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
      expect(events.filter((e) => e.type === 'skipped')).toEqual([
        expect.objectContaining({ key: 'report:nightly', where: 'Reports.nightly()' }),
      ]);
      expect(app.get(Reports).runs).toBe(0);
    } finally {
      stop();
      await app.close();
    }
  });
});
