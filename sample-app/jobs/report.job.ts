import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CurrentLock, LockHandle, Locked } from '../../lib';

/**
 * A scheduled job that must run on one instance at a time across the fleet. Its ttl (2 s) is
 * shorter than the work (about 5 s): the watchdog renews the lock while it runs. Every instance
 * ticks; only the one that gets the lock works (onBusy: 'skip'). The work checks the lock's signal
 * between steps and stops as soon as the lock is lost.
 */
@Injectable()
export class ReportJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ReportJob.name);
  private timer?: NodeJS.Timeout;
  runs = 0;
  lastSteps = 0;

  onApplicationBootstrap(): void {
    const every = Number(process.env.REPORT_EVERY_MS ?? 0);
    if (every > 0) this.timer = setInterval(() => void this.run(5).catch((e) => this.logger.warn(e.message)), every);
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  @Locked('job:nightly-report', { ttl: 2_000, onBusy: 'skip' })
  async run(steps: number, @CurrentLock() lock?: LockHandle): Promise<{ steps: number; token: string }> {
    const handle = lock as LockHandle;
    this.runs++;
    let done = 0;
    for (; done < steps; done++) {
      if (handle.signal.aborted) break; // lost: stop before the next step
      await new Promise((r) => setTimeout(r, 1_000));
    }
    this.lastSteps = done;
    this.logger.log(`report: ${done}/${steps} steps under token ${handle.fencingToken}`);
    return { steps: done, token: String(handle.fencingToken) };
  }
}
