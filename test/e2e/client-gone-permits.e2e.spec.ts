import 'reflect-metadata';
import { Controller, Get, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { request as httpRequest } from 'node:http';
import { DistributedLockModule, Locked, LockService, MemoryLockBackend } from '../../lib';
import type { ReleaseListener } from '../../lib/interfaces/lock-backend.interface';
import { eventually } from '../support/eventually';

/**
 * A semaphore on a backend without a native one (permits as seat locks `<key>#<i>`, as on Redlock):
 * a client that hangs up mid-wait ends the seat wait, as it ends a lock's. Before, the seat wait
 * listened only to the caller's own signal: the seat tries went on and the handler still ran once
 * a seat freed up. The backend is the memory backend without its native semaphore; the seat wait's
 * wake-up listeners, counted, show when it ends.
 */
const ran: string[] = [];

class SeatOnlyBackend extends MemoryLockBackend {
  /** Wake-up listeners open now (a seat wait keeps one per seat while it sleeps). */
  listening = 0;
  constructor() {
    super();
    const notifier = this.wakeups;
    const listen = notifier.listen.bind(notifier);
    notifier.listen = (key: string): ReleaseListener => {
      const l = listen(key);
      this.listening++;
      let open = true;
      return {
        wait: (ms, signal) => l.wait(ms, signal),
        dispose: () => {
          if (open) this.listening--;
          open = false;
          l.dispose();
        },
      };
    };
    // No native semaphore: `permits` takes seat locks.
    Object.defineProperty(this, 'semaphore', { value: undefined });
  }
}

@Controller()
class SeatController {
  @Get('seat/:id')
  @Locked('seat:<id>', { permits: 1, wait: 20_000 })
  async seat(@Param('id') id: string): Promise<string> {
    ran.push(`seat ${id}`);
    return id;
  }
}

describe('a client that hangs up ends a seat-semaphore wait', () => {
  let app: INestApplication;
  let locks: LockService;
  let backend: SeatOnlyBackend;
  let port: number;

  beforeAll(async () => {
    backend = new SeatOnlyBackend();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend })],
      controllers: [SeatController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    locks = app.get(LockService);
  });

  afterAll(async () => app?.close());

  it('stops the seat tries and never runs the handler', async () => {
    expect(backend.semaphore).toBeUndefined();
    const held = await locks.acquire('seat:s1', { permits: 1, ttl: 30_000 });
    const req = httpRequest({ host: '127.0.0.1', port, path: '/seat/s1', agent: false });
    req.on('error', () => undefined);
    req.end();
    // The request's seat wait sleeps on the seat's wake-up.
    await eventually(() => backend.listening === 1);
    req.destroy();
    await eventually(() => backend.listening === 0);
    await held.release();
    const next = await locks.tryAcquire('seat:s1', { permits: 1 });
    expect(next).not.toBeNull();
    await next?.release();
    expect(ran).toEqual([]);
  });
});
