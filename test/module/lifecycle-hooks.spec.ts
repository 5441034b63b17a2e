import 'reflect-metadata';
import {
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLockModule, Locked, LockService, MemoryLockBackend } from '../../lib';

/**
 * Nest 12 orders lifecycle hooks by dependency depth and runs shutdown hooks with
 * Promise.allSettled; Nest 11 orders by module distance. Locks taken from a user's own hooks must
 * work the same under both.
 */
@Injectable()
class Warmup implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  readonly seen: string[] = [];
  constructor(private readonly locks: LockService) {}

  @Locked('warmup:<phase>', { wait: 0 })
  async run(phase: string): Promise<string> {
    return phase;
  }

  async onModuleInit(): Promise<void> {
    this.seen.push(await this.run('init'));
    await this.locks.withLock('warmup:service', async () => this.seen.push('service'));
  }

  async onApplicationBootstrap(): Promise<void> {
    this.seen.push(await this.run('bootstrap'));
  }

  async onApplicationShutdown(): Promise<void> {
    this.seen.push(await this.run('shutdown'));
  }
}

@Module({ providers: [Warmup], exports: [Warmup] })
class WarmupModule {}

describe('locks in an application’s own lifecycle hooks', () => {
  it('take and release locks from onModuleInit, onApplicationBootstrap and onApplicationShutdown', async () => {
    const backend = new MemoryLockBackend();
    const ref = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend }), WarmupModule],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const warmup = app.get(Warmup);
    expect(warmup.seen).toEqual(['init', 'service', 'bootstrap']);
    await app.close();
    // The lock module's own shutdown (which stops the engine) runs after the hooks of the modules
    // that import it, on both majors: a lock taken in onApplicationShutdown still answers.
    expect(warmup.seen).toEqual(['init', 'service', 'bootstrap', 'shutdown']);
    expect((await backend.inspect('lock:warmup:shutdown')).held).toBe(false);
  });
});
