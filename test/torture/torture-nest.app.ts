import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  CurrentLock,
  DistributedLockModule,
  Locked,
  LockService,
  type LockBackend,
  type LockHandle,
} from '../../lib';
import type { Section, WorkerConfig } from './torture.worker';

/**
 * The worker's small Nest app, built over the package's public API only (lib/index.ts, what users
 * import): DistributedLockModule.forRoot + LockService, and a provider whose method is @Locked.
 * Returns one function per grant for the worker's flavour (withLock, acquire/release, @Locked).
 */
export interface WorkerRunner {
  (op: string): Promise<void>;
  close(): Promise<void>;
}

export async function createRunner(
  cfg: WorkerConfig,
  backend: LockBackend,
  section: Section,
): Promise<WorkerRunner> {
  const mode = cfg.role === 'reader' ? 'shared' : 'exclusive';
  const options = { ttl: cfg.ttl, wait: cfg.wait, mode } as const;

  // Defined here because @Locked takes its options at class definition.
  @Injectable()
  class CounterJob {
    @Locked(cfg.key, options)
    async run(op: string, @CurrentLock() handle?: LockHandle): Promise<void> {
      await section(handle as LockHandle, op);
    }
  }

  @Module({
    imports: [
      DistributedLockModule.forRoot({
        backend,
        keyPrefix: 'torture:',
        defaults: { ttl: cfg.ttl, wait: cfg.wait },
      }),
    ],
    providers: [CounterJob],
  })
  class WorkerModule {}

  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: false });
  await app.init();
  const locks = app.get(LockService);
  const job = app.get(CounterJob);
  let run: (op: string) => Promise<void>;
  switch (cfg.via) {
    case 'withLock':
      run = (op) => locks.withLock(cfg.key, (h) => section(h, op), options);
      break;
    case 'acquire':
      run = async (op) => {
        const handle = await locks.acquire(cfg.key, options);
        try {
          await section(handle, op);
        } finally {
          await handle.release();
        }
      };
      break;
    case 'locked':
      run = (op) => job.run(op);
      break;
  }
  // app.close() runs LockService's shutdown hook: held locks are released, timers stopped.
  return Object.assign(run, { close: () => app.close() });
}
