import 'reflect-metadata';
import {
  ArgumentsHost,
  Catch,
  Controller,
  Get,
  Injectable,
  Param,
  UseFilters,
  UseGuards,
  type CanActivate,
  type ExceptionFilter,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DistributedLockError, DistributedLockModule, LockService } from '../../../lib';
import { LockTesting } from '../../../lib/testing';
import { eventually } from '../../support/eventually';
import {
  ArrivalGuard,
  httpGet,
  ItemsController,
  leaksNothing,
  redisEnv,
  Runs,
} from './items.fixture';

@Catch()
class UserCatchAllFilter implements ExceptionFilter {
  catch(error: unknown, host: ArgumentsHost) {
    const res = host.switchToHttp().getResponse<{ raw?: unknown }>();
    const raw = (res.raw ?? res) as import('node:http').ServerResponse;
    raw.statusCode = 418;
    raw.end(JSON.stringify({ mine: error instanceof DistributedLockError ? error.code : 'other' }));
  }
}

/** A guard that takes a lock itself (try once): its lock error must map like any other. */
@Injectable()
class LockingGuard implements CanActivate {
  constructor(private readonly locks: LockService) {}
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const id = context.switchToHttp().getRequest<{ params: { id: string } }>().params.id;
    return this.locks.withLock(`item:${id}`, () => true, { wait: 0 });
  }
}

@Controller('more')
class MoreController {
  constructor(private readonly locks: LockService) {}

  /** No @Locked: the lock error comes out of LockService.withLock. */
  @Get(':id/service')
  async viaService(@Param('id') id: string): Promise<{ id: string }> {
    return this.locks.withLock(`item:${id}`, async () => ({ id }), { wait: 0 });
  }

  @Get(':id/guarded')
  @UseGuards(LockingGuard)
  async guarded(@Param('id') id: string): Promise<{ id: string }> {
    return { id };
  }

  @Get('plain-error')
  async plainError(): Promise<never> {
    throw new Error('boom: not a lock error');
  }

  @Get(':id/own-filter')
  @UseFilters(UserCatchAllFilter)
  async ownFilter(@Param('id') id: string): Promise<{ id: string }> {
    return this.locks.withLock(`item:${id}`, async () => ({ id }), { wait: 0 });
  }
}

const adapters = [
  { name: 'Express', make: () => new ExpressAdapter() },
  { name: 'Fastify', make: () => new FastifyAdapter() },
];

describe.each(adapters)('lock errors over HTTP on $name, against a real Redis', ({ make }) => {
  let env: Awaited<ReturnType<typeof redisEnv>>;
  let app: INestApplication;
  let port: number;
  let runs: Runs;

  beforeAll(async () => {
    env = await redisEnv();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot(env.options)],
      controllers: [ItemsController, MoreController],
      providers: [Runs, ArrivalGuard, LockingGuard],
    }).compile();
    app = moduleRef.createNestApplication(make(), { logger: false });
    await app.listen(0, '127.0.0.1');
    port = ((app.getHttpServer() as Server).address() as AddressInfo).port;
    runs = app.get(Runs);
  });

  afterAll(async () => {
    await app?.close();
    await env?.close();
  });

  it('200 when the lock is free', async () => {
    const res = await httpGet(port, '/items?id=a1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'a1' });
  });

  it('busy: 409 with Retry-After (the holder’s remaining ttl when the key has no history) and a safe body', async () => {
    const held = await LockTesting.hold(app, 'item:b1', { ttl: 5_000 });
    const res = await httpGet(port, '/items?id=b1');
    await held.release();
    expect(res.status).toBe(409);
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(4);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(5);
    expect(res.body).toMatchObject({
      statusCode: 409,
      error: 'Conflict',
      code: 'LOCK_ACQUIRE_TIMEOUT',
      message: 'The resource is busy; retry later',
    });
    expect(res.body.retryAfter).toBeGreaterThan(3_000);
    leaksNothing(res.text, env.port);
    expect(runs.count.get('b1')).toBeUndefined();
  });

  it('busy: short recent holds do not cut Retry-After below the holder’s remaining PTTL; header equals body', async () => {
    for (let i = 0; i < 3; i++) expect((await httpGet(port, '/items?id=e1')).status).toBe(200);
    // maxHold: 1 = never renewed, so the PTTL only shrinks from here on.
    const held = await LockTesting.hold(app, 'item:e1', { ttl: 4_500, maxHold: 1 });
    const res = await httpGet(port, '/items?id=e1');
    const left = (await app.get(LockService).inspect('item:e1')).holders[0]?.remainingTtl;
    await held.release();
    expect(res.status).toBe(409);
    expect(left).toBeGreaterThan(0);
    const seconds = Number(res.headers['retry-after']);
    expect(seconds * 1_000).toBeGreaterThanOrEqual(left!);
    expect(res.body.retryAfter).toBe(seconds * 1_000);
  });

  it('busy: lock errors thrown outside @Locked (LockService.withLock in a plain route, a guard) map too', async () => {
    const held = await LockTesting.hold(app, 'item:w1');
    const res = await httpGet(port, '/more/w1/service');
    await held.release();
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('LOCK_ACQUIRE_TIMEOUT');
    expect(res.headers['retry-after']).toBeDefined();
    const fromGuard = await LockTesting.hold(app, 'item:w2');
    const guarded = await httpGet(port, '/more/w2/guarded');
    await fromGuard.release();
    expect(guarded.status).toBe(409);
    expect(guarded.body.code).toBe('LOCK_ACQUIRE_TIMEOUT');
    expect((await httpGet(port, '/more/w2/guarded')).status).toBe(200);
  });

  it('leaves other errors and the user’s own filters alone', async () => {
    const plain = await httpGet(port, '/more/plain-error');
    expect(plain.status).toBe(500);
    expect(plain.body).toEqual({ statusCode: 500, message: 'Internal server error' });
    const held = await LockTesting.hold(app, 'item:f1');
    const own = await httpGet(port, '/more/f1/own-filter');
    await held.release();
    expect(own.status).toBe(418);
    expect(own.body).toEqual({ mine: 'LOCK_ACQUIRE_TIMEOUT' });
  });

  it('bad key: 400 without the template or the value', async () => {
    const res = await httpGet(port, '/items');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      statusCode: 400,
      code: 'LOCK_KEY_RESOLUTION',
      message: 'The request does not identify the resource to lock',
    });
    expect(res.text).not.toContain('<id>');
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('client gone: a waiting request whose client disconnects leaves the queue and its handler never runs', async () => {
    const held = await LockTesting.hold(app, 'item:g1', { ttl: 5_000 });
    const req = httpRequest({ host: '127.0.0.1', port, path: '/items/g1/wait', agent: false });
    req.on('error', () => undefined);
    req.end();
    await eventually(() => runs.arrived.get('g1') === 1 && env.waiting() === 1); // queued for the lock
    req.destroy();
    await eventually(() => env.waiting() === 0); // it left the queue without being granted anything
    await held.release();
    // Nobody is queued ahead: a try-once request gets the lock at once.
    const next = await httpGet(port, '/items?id=g1');
    expect(next.status).toBe(200);
    expect(runs.count.get('g1')).toBe(1); // only `next` ran; the waiter never did
  });

  it('client gone: an endless SSE stream releases its lock when the client goes away', async () => {
    let heldWhileStreaming: boolean | undefined;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/items/s1/stream',
          headers: { accept: 'text/event-stream' },
          agent: false,
        },
        (res) => {
          res.once('data', async () => {
            heldWhileStreaming = await LockTesting.isHeld(app, 'stream:s1');
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
      req.end();
    });
    expect(heldWhileStreaming).toBe(true);
    await eventually(async () => !(await LockTesting.isHeld(app, 'stream:s1')));
  });

  it('backend down: 503 within the wait budget, no address or driver text; recovers when Redis is back', async () => {
    await env.stop();
    try {
      const res = await httpGet(port, '/items?id=d1');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({
        statusCode: 503,
        code: 'LOCK_BACKEND_UNAVAILABLE',
        message: 'The lock service is unavailable; retry later',
      });
      leaksNothing(res.text, env.port);
    } finally {
      await env.start();
    }
    expect(
      await eventually(
        async () => (await httpGet(port, '/items?id=d1')).status === 200,
        20_000,
        100,
      ),
    ).toBe(true);
  });
});
