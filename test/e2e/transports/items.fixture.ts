import {
  Controller,
  Get,
  Injectable,
  Param,
  Query,
  Sse,
  UseGuards,
  type CanActivate,
  type MessageEvent,
} from '@nestjs/common';
import Redis from 'ioredis';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { interval, map, type Observable } from 'rxjs';
import { Locked, RedisLockBackend, type DistributedLockModuleOptions } from '../../../lib';
import { RedisServer } from '../../support/redis-server';

/** What every transport's handlers record: runs per key (a handler that never ran is absent). */
@Injectable()
export class Runs {
  readonly count = new Map<string, number>();
  arrived = new Map<string, number>();
  ran(key: string): void {
    this.count.set(key, (this.count.get(key) ?? 0) + 1);
  }
}

/** Counts requests that got past the guards: the next step is the @Locked wait. */
@Injectable()
export class ArrivalGuard implements CanActivate {
  constructor(private readonly runs: Runs) {}
  canActivate(context: import('@nestjs/common').ExecutionContext): boolean {
    const id = String(context.switchToHttp().getRequest<{ params: { id: string } }>().params.id);
    this.runs.arrived.set(id, (this.runs.arrived.get(id) ?? 0) + 1);
    return true;
  }
}

@Controller('items')
export class ItemsController {
  constructor(private readonly runs: Runs) {}

  /** 200 when free, 409 at once when busy, 400 without an id, 503 when Redis is down. */
  @Get()
  @Locked('item:<id>', { onBusy: 'fail' })
  async get(@Query('id') id: string): Promise<{ id: string }> {
    this.runs.ran(id);
    return { id };
  }

  /** Waits for the lock (up to 20 s): the client-gone scenario. */
  @Get(':id/wait')
  @UseGuards(ArrivalGuard)
  @Locked('item:<id>', { wait: 20_000 })
  async wait(@Param('id') id: string): Promise<{ id: string }> {
    this.runs.ran(id);
    return { id };
  }

  /** An endless stream under the lock: it must release when the client goes away. */
  @Sse(':id/stream')
  @Locked('stream:<id>')
  stream(@Param('id') id: string): Observable<MessageEvent> {
    return interval(10).pipe(map((i) => ({ data: { id, i } })));
  }
}

/** A private Redis and module options for it; stop()/start() take it down and bring it back. */
export async function redisEnv() {
  const server = await RedisServer.start();
  const client = new Redis({
    port: server.port,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 100,
  });
  client.on('error', () => undefined);
  const backend = new RedisLockBackend({ client });
  // A probe, not a mock: counts the requests the backend has queued (from a busy answer with a
  // wake until their grant or their leave), so a test can see a waiter leave the queue. The real
  // backend does the work.
  const queued = new Set<string>();
  const tryAcquire = backend.tryAcquire.bind(backend);
  backend.tryAcquire = async (request) => {
    const result = await tryAcquire(request);
    if (result.acquired) queued.delete(request.owner);
    else if (result.wake) queued.add(request.owner);
    return result;
  };
  const leave = backend.leave.bind(backend);
  backend.leave = async (request) => {
    await leave(request);
    queued.delete(request.owner);
  };
  const options: DistributedLockModuleOptions = {
    backend,
    defaults: { ttl: 5_000, wait: 5_000 },
    operationTimeout: 500,
  };
  return {
    server,
    options,
    port: server.port,
    /** Waits for a busy lock in progress in this process. */
    waiting: () => queued.size,
    stop: () => server.kill(),
    start: () => server.start(),
    async close() {
      client.disconnect();
      await server.destroy();
    },
  };
}

/** Text that must never reach a client: the Redis address and driver messages. */
export function leaksNothing(text: string, port: number): void {
  for (const secret of [
    String(port),
    '127.0.0.1',
    'ECONNREFUSED',
    'lock:',
    'item:',
    'Redis',
    'redis',
  ]) {
    expect(text).not.toContain(secret);
  }
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  body: Record<string, unknown>;
}

/** One GET over a real socket. */
export function httpGet(port: number, path: string): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, agent: false },
      (res: IncomingMessage) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let body: Record<string, unknown> = {};
          try {
            body = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
