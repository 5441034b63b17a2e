import 'reflect-metadata';
import { Controller, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DistributedLockModule, Locked, LockService, MemoryLockBackend } from '../../lib';
import { LockTesting } from '../../lib/testing';

@Controller('orders')
class OrdersController {
  @Post(':id/pay')
  @Locked('order:<id>', { onBusy: 'fail' })
  async pay(@Param('id') id: string): Promise<{ paid: string }> {
    return { paid: id };
  }
}

/**
 * Issue 34.11: the demo answered `Retry-After: 1` (body `"retryAfter": 0`) while the holder had
 * 4.5 s of ttl left, because the key's recent holds were short and the estimate was their average
 * capped by the ttl. The advice is now never shorter than the ttl the holder has left, and the body
 * says what the header says.
 */
describe('Retry-After on the memory backend', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() })],
      controllers: [OrdersController],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(() => app?.close());

  it('a 409 after short holds is not shorter than the holder’s remaining ttl, and the header equals the body', async () => {
    // Recent holds of the key took next to nothing: today's estimate said 0 ms.
    for (let i = 0; i < 3; i++)
      expect((await request(app.getHttpServer()).post('/orders/42/pay')).status).toBe(201);
    // maxHold: 1 = never renewed, so the ttl left only shrinks from here on.
    const held = await LockTesting.hold(app, 'order:42', { ttl: 4_500, maxHold: 1 });
    const res = await request(app.getHttpServer()).post('/orders/42/pay');
    const report = await app.get(LockService).inspect('order:42');
    await held.release();

    expect(res.status).toBe(409);
    const left = report.holders[0]?.remainingTtl;
    expect(left).toBeGreaterThan(0);
    const seconds = Number(res.headers['retry-after']);
    expect(seconds * 1_000).toBeGreaterThanOrEqual(left!);
    expect(res.body.retryAfter).toBe(seconds * 1_000);
  });
});
