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
  (op: string, grant?: GrantSpec): Promise<void>;
  close(): Promise<void>;
}

/** What one operation asks for: the plain lock on cfg.key (absent), a semaphore, or several keys. */
export interface GrantSpec {
  key: string | string[];
  permits?: number;
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
  // Semaphores and multi-key locks go through LockService (a @Locked key is fixed per method).
  const viaService = cfg.via === 'locked' ? 'withLock' : cfg.via;
  const run = async (op: string, grant?: GrantSpec): Promise<void> => {
    const key = grant?.key ?? cfg.key;
    const opts = grant?.permits === undefined ? options : { ...options, permits: grant.permits };
    if (grant === undefined && cfg.via === 'locked') return job.run(op);
    if (viaService === 'withLock') return locks.withLock(key, (h) => section(h, op), opts);
    const handle = await locks.acquire(key, opts);
    try {
      await section(handle, op);
    } finally {
      await handle.release();
    }
  };
  // app.close() runs LockService's shutdown hook: held locks are released, timers stopped.
  return Object.assign(run, { close: () => app.close() });
}
