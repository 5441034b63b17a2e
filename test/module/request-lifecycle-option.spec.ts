import 'reflect-metadata';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DistributedLockModule, InvalidLockOptionsError, MemoryLockBackend } from '../../lib';
import { currentRequestSignal } from '../../lib/interceptors/request-signal';

/**
 * `requestLifecycle` (a forRoot/forRootAsync extra, default true): whether the module applies its
 * request-context middleware, which gives every HTTP request the "client left" signal that lock
 * waits run under (no global interceptor either way, so Nest's interceptor pipeline does not run
 * for routes that take no lock). `false` applies none; anything but a boolean fails at start-up.
 */
@Controller('probe')
class ProbeController {
  @Get()
  probe(): { signal: boolean } {
    return { signal: currentRequestSignal() !== undefined };
  }
}

async function app(extras: { requestLifecycle?: unknown }): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      DistributedLockModule.forRoot({
        backend: new MemoryLockBackend(),
        ...(extras as { requestLifecycle?: boolean }),
      }),
    ],
    controllers: [ProbeController],
  }).compile();
  const application = moduleRef.createNestApplication({ logger: false });
  await application.init();
  return application;
}

describe('DistributedLockModule requestLifecycle', () => {
  it.each([
    ['by default, every HTTP request runs under the client-gone signal', {}, true],
    [
      'requestLifecycle: false applies no middleware: requests carry no signal',
      { requestLifecycle: false },
      false,
    ],
  ])('%s', async (_name, extras, signal) => {
    const application = await app(extras);
    try {
      const res = await request(application.getHttpServer()).get('/probe').expect(200);
      expect(res.body).toEqual({ signal });
    } finally {
      await application.close();
    }
  });

  it('forRootAsync takes it too', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRootAsync({
          useFactory: () => ({ backend: new MemoryLockBackend() }),
          requestLifecycle: false,
        }),
      ],
      controllers: [ProbeController],
    }).compile();
    const application = moduleRef.createNestApplication({ logger: false });
    await application.init();
    try {
      const res = await request(application.getHttpServer()).get('/probe').expect(200);
      expect(res.body).toEqual({ signal: false });
    } finally {
      await application.close();
    }
  });

  it('a value that is not a boolean fails at start-up, naming the option', () => {
    expect(() =>
      DistributedLockModule.forRoot({
        backend: new MemoryLockBackend(),
        requestLifecycle: 'no' as unknown as boolean,
      }),
    ).toThrow(InvalidLockOptionsError);
    expect(() =>
      DistributedLockModule.forRoot({
        backend: new MemoryLockBackend(),
        requestLifecycle: 'no' as unknown as boolean,
      }),
    ).toThrow(/requestLifecycle/);
  });
});
