import 'reflect-metadata';
import {
  Body,
  Controller,
  Get,
  Injectable,
  Param,
  Post,
  Res,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import type { AbstractHttpAdapter } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { request as httpRequest } from 'node:http';
import { DistributedLockModule, Locked, LockService, MemoryLockBackend } from '../../lib';
import { eventually } from '../support/eventually';

/**
 * A client that hangs up cancels its request's lock wait wherever the wait is: a @Locked route
 * (GET, and POST with a body Fastify parses after its hooks), a service called by a plain route
 * (LockService and a @Locked service method), and a guard. The module registers no global
 * interceptor: its middleware attaches the request, and the client's 'close' is listened to only
 * while a wait is.
 */
const ran: string[] = [];

@Injectable()
class Stock {
  constructor(private readonly locks: LockService) {}

  reserve(id: string): Promise<string> {
    return this.locks.withLock(`item:${id}`, () => (ran.push(`service ${id}`), id), {
      wait: 20_000,
    });
  }

  @Locked('item:<id>', { wait: 20_000 })
  async count(id: string): Promise<string> {
    ran.push(`locked service ${id}`);
    return id;
  }
}

@Injectable()
class LockingGuard implements CanActivate {
  constructor(private readonly locks: LockService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const { id } = context.switchToHttp().getRequest<{ params: { id: string } }>().params;
    const handle = await this.locks.acquire(`item:${id}`, { wait: 20_000 });
    await handle.release();
    return true;
  }
}

@Controller()
class GoneController {
  constructor(private readonly stock: Stock) {}

  @Get('locked/:id')
  @Locked('item:<id>', { wait: 20_000 })
  async locked(@Param('id') id: string): Promise<string> {
    ran.push(`route ${id}`);
    return id;
  }

  @Post('locked')
  @Locked('item:<body.id>', { wait: 20_000 })
  async posted(@Body() body: { id: string }): Promise<string> {
    ran.push(`post ${body.id}`);
    return body.id;
  }

  @Get('plain/:id')
  plain(@Param('id') id: string): Promise<string> {
    return this.stock.reserve(id);
  }

  @Get('plain-locked/:id')
  plainLocked(@Param('id') id: string): Promise<string> {
    return this.stock.count(id);
  }

  @Get('listeners/plain')
  plainListeners(@Res({ passthrough: true }) res: object): string {
    return closeListeners(res);
  }

  @Get('listeners/locked')
  @Locked('listeners:locked')
  async lockedListeners(@Res({ passthrough: true }) res: object): Promise<string> {
    return closeListeners(res);
  }

  @Get('guarded/:id')
  @UseGuards(LockingGuard)
  guarded(@Param('id') id: string): string {
    ran.push(`guarded ${id}`);
    return id;
  }
}

/** How many 'close' listeners the raw response has (Express res, Fastify reply.raw). */
function closeListeners(res: object): string {
  const raw = ((res as { raw?: object }).raw ?? res) as { listenerCount(event: string): number };
  return String(raw.listenerCount('close'));
}

const platforms: { name: string; adapter: () => AbstractHttpAdapter }[] = [
  { name: 'Express', adapter: () => new ExpressAdapter() },
  { name: 'Fastify', adapter: () => new FastifyAdapter() as unknown as AbstractHttpAdapter },
];

describe.each(platforms)('a client that hangs up cancels its lock wait ($name)', (platform) => {
  let app: INestApplication;
  let locks: LockService;
  let port: number;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() })],
      controllers: [GoneController],
      providers: [Stock, LockingGuard],
    }).compile();
    app = moduleRef.createNestApplication(platform.adapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    locks = app.get(LockService);
  });

  afterAll(async () => {
    await app?.close();
  });

  /** Holds `key`, sends the request, hangs up once it waits; the wait must end with nothing run. */
  async function hangUpWhileWaiting(key: string, path: string, body?: object): Promise<void> {
    ran.length = 0;
    const held = await locks.acquire(key, { ttl: 30_000 });
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      path,
      method: body ? 'POST' : 'GET',
      headers: body ? { 'content-type': 'application/json' } : {},
      agent: false,
    });
    req.on('error', () => undefined);
    req.end(body ? JSON.stringify(body) : undefined);
    await eventually(() => locks.waitingLocks().length === 1);
    req.destroy();
    await eventually(() => locks.waitingLocks().length === 0);
    await held.release();
    // Nobody is queued ahead: the key is free at once, and the waiter's work never ran.
    const next = await locks.tryAcquire(key);
    expect(next).not.toBeNull();
    await next?.release();
    expect(ran).toEqual([]);
  }

  it('on a @Locked route', async () => {
    await hangUpWhileWaiting('item:r1', '/locked/r1');
  });

  it('on a @Locked POST route whose body is parsed before the handler', async () => {
    await hangUpWhileWaiting('item:p1', '/locked', { id: 'p1' });
  });

  it('in LockService.withLock of a service called by a plain route', async () => {
    await hangUpWhileWaiting('item:s1', '/plain/s1');
  });

  it('in a @Locked service method called by a plain route', async () => {
    await hangUpWhileWaiting('item:s2', '/plain-locked/s2');
  });

  it('in a guard that takes a lock', async () => {
    await hangUpWhileWaiting('item:g1', '/guarded/g1');
  });

  it('a request that takes no lock, or a free one, adds no listener to its connection', async () => {
    const plain = await (await fetch(`http://127.0.0.1:${port}/listeners/plain`)).text();
    const locked = await (await fetch(`http://127.0.0.1:${port}/listeners/locked`)).text();
    expect(locked).toBe(plain);
    expect(locks.waitingLocks()).toEqual([]);
  });
});
