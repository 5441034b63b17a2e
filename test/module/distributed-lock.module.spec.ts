import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DistributedLockModule,
  InvalidLockOptionsError,
  LockAcquireTimeoutError,
  LockEngine,
  Locked,
  LockLostError,
  LockService,
  MemoryLockBackend,
  type DistributedLockModuleOptions,
} from '../../lib';

@Injectable()
class ReportJob {
  runs = 0;
  active = 0;
  maxActive = 0;

  @Locked('job:reports', { onBusy: 'skip', ttl: 1_000 })
  async run(release: Promise<void>): Promise<string> {
    this.runs++;
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    await release;
    this.active--;
    return 'done';
  }

  @Locked((tenant: { id: string }) => `tenant:${tenant.id}`, { backend: 'other' })
  async perTenant(tenant: { id: string }): Promise<string> {
    return tenant.id;
  }
}

@Injectable()
class Settings {
  readonly lockTtl = 1_500;
}

@Module({ providers: [Settings], exports: [Settings] })
class SettingsModule {}

async function boot(
  options: DistributedLockModuleOptions,
  providers: unknown[] = [ReportJob],
): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: [DistributedLockModule.forRoot(options)],
    providers: providers as never[],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('DistributedLockModule', () => {
  it('fails start-up on invalid options, naming the option (forRoot)', async () => {
    const cases: [DistributedLockModuleOptions, string][] = [
      [{} as DistributedLockModuleOptions, 'backend'],
      [{ backend: {} as never }, 'backend'],
      [{ backend: new MemoryLockBackend(), defaults: { ttl: -1 } }, 'defaults.ttl'],
      [{ backend: new MemoryLockBackend(), defaults: { wait: Number.NaN } }, 'defaults.wait'],
      [{ backend: new MemoryLockBackend(), defaults: { mode: 'both' as never } }, 'defaults.mode'],
      [{ backend: new MemoryLockBackend(), keyPrefix: 'a{b}' }, 'keyPrefix'],
      [{ backend: new MemoryLockBackend(), keyPrefix: 'app:\ud800' }, 'keyPrefix'],
      [{ backends: { main: new MemoryLockBackend() } }, 'backends'],
      [{ backend: new MemoryLockBackend(), httpErrors: 'yes' as never }, 'httpErrors'],
      [{ backend: new MemoryLockBackend(), operationTimeout: 0 }, 'operationTimeout'],
      [
        {
          backend: Object.assign(new MemoryLockBackend(), {
            capabilities: {
              shared: true,
              fencing: 'strict',
              sessionBased: false,
              maxKeyLength: 512,
              minTtl: 1_000,
            },
          }),
          defaults: { ttl: 500 },
        } as DistributedLockModuleOptions,
        'defaults.ttl',
      ],
    ];
    for (const [options, option] of cases) {
      const attempt = Test.createTestingModule({
        imports: [DistributedLockModule.forRoot(options)],
      }).compile();
      await expect(attempt).rejects.toBeInstanceOf(InvalidLockOptionsError);
      await expect(
        Test.createTestingModule({ imports: [DistributedLockModule.forRoot(options)] }).compile(),
      ).rejects.toMatchObject({ option });
    }
  });

  it('forRootAsync validates the same way and takes injected configuration', async () => {
    const bad = Test.createTestingModule({
      imports: [
        DistributedLockModule.forRootAsync({
          useFactory: () => ({ backend: new MemoryLockBackend(), defaults: { ttl: 0 } }),
        }),
      ],
    }).compile();
    await expect(bad).rejects.toMatchObject({
      name: 'InvalidLockOptionsError',
      option: 'defaults.ttl',
    });

    const ref = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (s: Settings) => ({
            backend: new MemoryLockBackend(),
            defaults: { ttl: s.lockTtl },
          }),
        }),
      ],
    }).compile();
    const engine = ref.get(LockEngine);
    expect(engine.defaults.ttl).toBe(1_500);
    await ref.close();
  });

  it('rejects a template placeholder that names no parameter at class definition, naming method and parameters', () => {
    expect(() => {
      class Broken {
        @Locked('order:<orderId>')
        async pay(id: string, amount: number) {
          return [id, amount];
        }
      }
      return Broken;
    }).toThrow(
      /<orderId> must name a parameter of Broken\.pay\(\), whose parameters are: id \(0\), amount \(1\)/,
    );
    expect(() => {
      class Broken2 {
        @Locked('order:<2>')
        async pay(id: string) {
          return id;
        }
      }
      return Broken2;
    }).toThrow(InvalidLockOptionsError);
    expect(() => {
      class Broken3 {
        @Locked('order:<id>', { ttl: -1 })
        async pay(id: string) {
          return id;
        }
      }
      return Broken3;
    }).toThrow(/"ttl"/);
  });

  it('fails start-up when @Locked names a backend that is not registered', async () => {
    await expect(boot({ backend: new MemoryLockBackend() })).rejects.toMatchObject({
      name: 'InvalidLockOptionsError',
      option: 'backend',
    });
  });

  it('locks plain provider methods: a second run while one is running is skipped (onBusy: skip)', async () => {
    const app = await boot({
      backends: { default: new MemoryLockBackend(), other: new MemoryLockBackend() },
    });
    const job = app.get(ReportJob);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const first = job.run(gate);
    const second = await job.run(Promise.resolve());
    expect(second).toBeUndefined();
    open();
    expect(await first).toBe('done');
    expect(job.runs).toBe(1);
    expect(await job.run(Promise.resolve())).toBe('done');
    expect(job.maxActive).toBe(1);
    expect(await job.perTenant({ id: 't1' })).toBe('t1');
    await app.close();
  });

  it('routes @Locked({ backend }) and LockService calls to the named backend', async () => {
    const other = new MemoryLockBackend();
    const app = await boot({ backends: { default: new MemoryLockBackend(), other } });
    const spy = jest.spyOn(other, 'tryAcquire');
    await app.get(ReportJob).perTenant({ id: 'x' });
    expect(spy).toHaveBeenCalledTimes(1);
    const locks = app.get(LockService);
    const h = await locks.acquire('k', { backend: 'other' });
    expect(spy).toHaveBeenCalledTimes(2);
    await h.release();
    await expect(locks.acquire('k', { backend: 'third' })).rejects.toMatchObject({
      option: 'backend',
    });
    await app.close();
  });

  it('on shutdown releases every held lock, aborts the holders’ signals and stops the watchdog', async () => {
    const backend = new MemoryLockBackend();
    const app = await boot({ backends: { default: backend, other: new MemoryLockBackend() } });
    const locks = app.get(LockService);
    const handles = await Promise.all(
      ['a', 'b', 'c'].map((k) => locks.acquire(k, { ttl: 60_000 })),
    );
    const renew = jest.spyOn(backend, 'renew');
    await app.close();
    for (const h of handles) {
      expect(h.held).toBe(false);
      expect(h.signal.reason).toBeInstanceOf(LockLostError);
    }
    const other = new LockEngine({ backend });
    for (const k of ['a', 'b', 'c']) {
      const h = await other.acquire(k, { wait: 0 });
      await h.release();
    }
    expect(renew).not.toHaveBeenCalled();
    await expect(locks.acquire('d')).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
  });

  it('LockService: acquire, tryAcquire, withLock and current()', async () => {
    const app = await boot({
      backends: { default: new MemoryLockBackend(), other: new MemoryLockBackend() },
      defaults: { wait: 50 },
    });
    const locks = app.get(LockService);
    const result = await locks.withLock('w', async (h) => {
      expect(locks.current()?.fencingToken).toBe(h.fencingToken);
      expect(locks.current('w')?.key).toBe('w');
      const again = await locks.tryAcquire('w'); // re-entrant in this context
      expect(again?.fencingToken).toBe(h.fencingToken);
      await again?.release();
      return 42;
    });
    expect(result).toBe(42);
    expect(locks.current()).toBeUndefined();
    const h = await locks.acquire('w');
    await expect(locks.acquire('w')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    expect(await locks.tryAcquire('w')).toBeNull();
    await h.release();
    await app.close();
  });
});
