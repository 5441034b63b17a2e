import 'reflect-metadata';
import { Controller, Get, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { request as httpRequest } from 'node:http';
import { DistributedLockModule, Locked, LockService, MemoryLockBackend } from '../../lib';
import type { ReleaseListener } from '../../lib/interfaces/lock-backend.interface';
import { eventually } from '../support/eventually';

/**
 * A semaphore on a backend without a native one (permits as permit locks `<key>#<i>`, as on
 * Redlock): a client that hangs up mid-wait ends the permit wait, as it ends a lock's. Before, the
 * permit wait listened only to the caller's own signal: the permit tries went on and the handler
 * still ran once a permit freed up. The backend is the memory backend without its native semaphore;
 * the permit wait's wake-up listeners, counted, show when it ends.
 */
const ran: string[] = [];

class PermitOnlyBackend extends MemoryLockBackend {
  /** Wake-up listeners open now (a permit wait keeps one per permit while it sleeps). */
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
    // No native semaphore: `permits` takes permit locks.
    Object.defineProperty(this, 'semaphore', { value: undefined });
  }
}

@Controller()
class PermitController {
  @Get('permit/:id')
  @Locked('permit:<id>', { permits: 1, wait: 20_000 })
  async permit(@Param('id') id: string): Promise<string> {
    ran.push(`permit ${id}`);
    return id;
  }
}

describe('a client that hangs up ends a lock-semaphore wait', () => {
  let app: INestApplication;
  let locks: LockService;
  let backend: PermitOnlyBackend;
  let port: number;

  beforeAll(async () => {
    backend = new PermitOnlyBackend();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend })],
      controllers: [PermitController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    locks = app.get(LockService);
  });

  afterAll(async () => app?.close());

  it('stops the permit tries and never runs the handler', async () => {
    expect(backend.semaphore).toBeUndefined();
    const held = await locks.acquire('permit:s1', { permits: 1, ttl: 30_000 });
    const req = httpRequest({ host: '127.0.0.1', port, path: '/permit/s1', agent: false });
    req.on('error', () => undefined);
    req.end();
    // The request's permit wait sleeps on the permit's wake-up.
    await eventually(() => backend.listening === 1);
    req.destroy();
    await eventually(() => backend.listening === 0);
    await held.release();
    const next = await locks.tryAcquire('permit:s1', { permits: 1 });
    expect(next).not.toBeNull();
    await next?.release();
    expect(ran).toEqual([]);
  });
});
