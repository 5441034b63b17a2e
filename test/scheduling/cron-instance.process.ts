/**
 * One instance of a scheduled app for the multi-instance test: @nestjs/schedule fires every
 * second; the instance waits `offset` ms (standing in for its clock running late), then calls the
 * job. Mode 'job' locks with @LockedJob (minHold 500); mode 'control' with a plain
 * @Locked(onBusy 'skip') and no minHold. Each run is recorded in Redis as "<tick second>:<id>".
 * argv: redisPort offsetMs mode id
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, CronExpression, ScheduleModule } from '@nestjs/schedule';
import Redis from 'ioredis';
import { DistributedLockModule, Locked, LockedJob, RedisLockBackend } from '../../lib';

const [port, offset, mode, id] = process.argv.slice(2);
const redis = new Redis({ port: Number(port), host: '127.0.0.1' });

async function record(fired: number): Promise<void> {
  await redis.rpush(`runs:${mode}`, `${Math.round(fired / 1000)}:${id}`);
  await new Promise((r) => setTimeout(r, 5)); // a short job: it ends long before the next tick
}

@Injectable()
class ReportJob {
  @LockedJob('report', { minHold: 500, ttl: 2_000 })
  async withMinHold(fired: number): Promise<void> {
    await record(fired);
  }

  @Locked('job:report-control', { ttl: 2_000, onBusy: 'skip', wait: 0 })
  async withoutMinHold(fired: number): Promise<void> {
    await record(fired);
  }
}

@Injectable()
class Ticker {
  constructor(private readonly job: ReportJob) {}

  @Cron(CronExpression.EVERY_SECOND)
  async tick(): Promise<void> {
    const fired = Date.now();
    await new Promise((r) => setTimeout(r, Number(offset)));
    if (mode === 'job') await this.job.withMinHold(fired);
    else await this.job.withoutMinHold(fired);
  }
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    DistributedLockModule.forRoot({
      backend: new RedisLockBackend({ client: redis }),
      keyPrefix: 'cron-test:',
    }),
  ],
  providers: [ReportJob, Ticker],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await app.init();
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => {
    void app
      .close()
      .then(() => redis.quit())
      .finally(() => process.exit(0));
  });
}

main().catch((error) => {
  process.stdout.write(`error ${String(error)}\n`);
  process.exit(1);
});
