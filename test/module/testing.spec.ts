import 'reflect-metadata';
import { Controller, Get, Injectable, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  DistributedLockModule,
  InvalidLockOptionsError,
  LockAcquireTimeoutError,
  LockEngine,
  Locked,
  LockModuleMissingError,
  LockService,
  MemoryLockBackend,
  type DistributedLockModuleOptions,
} from '../../lib';
import { LockTesting, LockTestingHelper } from '../../lib/testing';

@Injectable()
class Payments {
  calls = 0;

  @Locked('order:<id>')
  async pay(id: string): Promise<string> {
    this.calls++;
    return `paid ${id}`;
  }
}

@Controller('pay')
class PayController {
  constructor(private readonly payments: Payments) {}

  @Get(':id')
  @Locked('order:<id>', { retryAfter: 7_000 })
  async pay(@Param('id') id: string): Promise<{ ok: string }> {
    return { ok: await this.payments.pay(id) };
  }
}

describe('testing your own code', () => {
  afterEach(() => LockTesting.reset());

  it('@Locked works right after compile(), without init()', async () => {
    const ref = await Test.createTestingModule({
      imports: [DistributedLockModule.forTesting()],
      providers: [Payments],
    }).compile();
    const payments = ref.get(Payments);
    await expect(payments.pay('A')).resolves.toBe('paid A');
    const held = await ref.get(LockTestingHelper).hold('order:B');
    await expect(payments.pay('B')).rejects.toBeInstanceOf(LockAcquireTimeoutError); // forTesting: wait 0
    await held.release();
    await expect(payments.pay('B')).resolves.toBe('paid B');
    await ref.close();
  });

  it('two compiled modules at once: each instance uses its own module', async () => {
    const a = await Test.createTestingModule({
      imports: [DistributedLockModule.forTesting()],
      providers: [Payments],
    }).compile();
    const b = await Test.createTestingModule({
      imports: [DistributedLockModule.forTesting()],
      providers: [Payments],
    }).compile();
    const held = await LockTesting.hold(a, 'order:X');
    await expect(a.get(Payments).pay('X')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await expect(b.get(Payments).pay('X')).resolves.toBe('paid X'); // b's memory backend is another world
    await held.release();
    await a.close();
    await b.close();
  });

  it('forTesting + LockTesting.hold provoke a 409 with the per-lock Retry-After', async () => {
    const ref = await Test.createTestingModule({
      imports: [DistributedLockModule.forTesting()],
      controllers: [PayController],
      providers: [Payments],
    }).compile();
    const app: INestApplication = ref.createNestApplication({ logger: false });
    await app.init();
    const held = await LockTesting.hold(app, 'order:C');
    expect(await LockTesting.isHeld(app, 'order:C')).toBe(true);
    const res = await request(app.getHttpServer()).get('/pay/C');
    expect(res.status).toBe(409);
    expect(res.headers['retry-after']).toBe('7');
    expect(res.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'LOCK_ACQUIRE_TIMEOUT',
      message: 'The resource is busy; retry later',
      retryAfter: 7_000,
    });
    await held.release();
    expect((await request(app.getHttpServer()).get('/pay/C')).status).toBe(200);
    await app.close();
  });

  it('a @Locked method with no module at all fails with LockModuleMissingError naming the method and the fix', async () => {
    // Jest gives each spec file its own module registry, and every module above was closed.
    const payments = new Payments();
    const error = await payments.pay('D').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockModuleMissingError);
    if (!(error instanceof LockModuleMissingError)) return;
    expect(error.code).toBe('LOCK_MODULE_MISSING');
    expect(error.method).toBe('Payments.pay()');
    expect(error.message).toContain('DistributedLockModule.forTesting()');
    expect(error.message).toContain('LockTesting.useEngine()');
    expect(payments.calls).toBe(0);
  });

  it('LockTesting.useEngine() serves instances made with `new`', async () => {
    const engine = LockTesting.useEngine();
    const payments = new Payments();
    await expect(payments.pay('E')).resolves.toBe('paid E');
    const held = await engine.runInScope(() => engine.acquire('order:E'));
    await expect(payments.pay('E')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await held.release();
  });

  it('forTesting keeps every other option: a given backend, longer waits', async () => {
    const backend = new MemoryLockBackend();
    const ref = await Test.createTestingModule({
      imports: [DistributedLockModule.forTesting({ backend, defaults: { wait: 2_000 } })],
      providers: [Payments],
    }).compile();
    const engine = ref.get(LockEngine);
    expect(engine.backend()).toBe(backend);
    expect(engine.defaults.wait).toBe(2_000);
    await ref.close();
  });
});

describe('tryAcquire tries once', () => {
  it('never waits, even with { wait: undefined } under a long default wait', async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend(), defaults: { wait: 60_000 } });
    const held = await engine.acquire('k');
    expect(await engine.runInScope(() => engine.tryAcquire('k', { wait: undefined }))).toBeNull();
    expect(await engine.runInScope(() => engine.tryAcquire('k'))).toBeNull();
    await expect(engine.tryAcquire('k', { wait: 100 })).rejects.toBeInstanceOf(
      InvalidLockOptionsError,
    );
    await held.release();
    await engine.close();
  });

  it('LockService.tryAcquire too', async () => {
    const ref = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({
          backend: new MemoryLockBackend(),
          defaults: { wait: 60_000 },
        }),
      ],
    }).compile();
    const locks = ref.get(LockService);
    const held = await LockTesting.hold(ref, 'k');
    expect(await locks.tryAcquire('k', { wait: undefined })).toBeNull();
    await held.release();
    await ref.close();
  });
});

describe('error mapping options', () => {
  async function app(options: Partial<DistributedLockModuleOptions>): Promise<INestApplication> {
    const ref = await Test.createTestingModule({
      imports: [DistributedLockModule.forTesting(options)],
      controllers: [PayController],
      providers: [Payments],
    }).compile();
    const a = ref.createNestApplication({ logger: false });
    await a.init();
    return a;
  }

  it('fails start-up on a bad errorMapping, naming it', async () => {
    for (const [options, name] of [
      [{ errorMapping: 'yes' }, 'errorMapping'],
      [{ errorMapping: { htp: true } }, 'errorMapping.htp'],
      [{ errorMapping: { http: 1 } }, 'errorMapping.http'],
      [{ exposeErrorDetails: 'no' }, 'exposeErrorDetails'],
    ] as const) {
      const error = await app(options as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidLockOptionsError);
      expect((error as InvalidLockOptionsError).option).toBe(name);
    }
  });

  it('errorMapping: false leaves lock errors to Nest (a bare 500)', async () => {
    const a = await app({ errorMapping: false });
    const held = await LockTesting.hold(a, 'order:F');
    const res = await request(a.getHttpServer()).get('/pay/F');
    await held.release();
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ statusCode: 500, message: 'Internal server error' });
    await a.close();
  });

  it('a per-transport mapper replaces the HTTP answer; undefined falls back to the default', async () => {
    const { HttpException } = await import('@nestjs/common');
    const a = await app({
      errorMapping: {
        http: (error, _host, response) =>
          error.code === 'LOCK_ACQUIRE_TIMEOUT'
            ? new HttpException({ busy: true, after: response.retryAfter }, 429)
            : undefined,
      },
    });
    const held = await LockTesting.hold(a, 'order:G');
    const res = await request(a.getHttpServer()).get('/pay/G');
    await held.release();
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ busy: true, after: 7_000 });
    await a.close();
  });

  it('exposeErrorDetails shows the message and key (internal APIs)', async () => {
    const a = await app({ exposeErrorDetails: true });
    const held = await LockTesting.hold(a, 'order:H');
    const res = await request(a.getHttpServer()).get('/pay/H');
    await held.release();
    expect(res.body.key).toBe('order:H');
    expect(res.body.message).toContain('order:H');
    await a.close();
  });
});
