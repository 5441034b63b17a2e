import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockService } from '../../lib';
import { DemoModule } from '../../sample-app/home/demo.module';
import { eventually } from '../support/eventually';

/** `npm run demo` greets a visitor: `/` lists the demo's routes and how to see a 409, and the 409 recipe works. */
describe('sample app home page', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({ imports: [DemoModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => app?.close());

  it('GET / answers 200 with an HTML page listing every route', async () => {
    const res = await request(app.getHttpServer()).get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    for (const route of [
      '/orders/:id/pay',
      '/orders/:id/pay-now',
      '/orders/:id',
      '/inventory/:sku',
      '/jobs/report/:steps',
      '/demo/hold/:id',
    ]) {
      expect(res.text).toContain(`<code>${route}</code>`);
    }
    expect(res.text).toContain('See a 409');
    expect(res.text).toContain('/demo/hold/42?ms=10000');
  });

  it("the page's recipe gives a 409: pay-now answers 409 with Retry-After while /demo/hold holds the order", async () => {
    const server = app.getHttpServer();
    const locks = app.get(LockService);
    const holding = request(server)
      .post('/demo/hold/77?ms=1500')
      .then((r) => r);
    // Wait for the event "the hold route has the lock": a try-once acquire is refused.
    await eventually(async () => {
      const probe = await locks.tryAcquire('order:77');
      await probe?.release();
      return probe === null;
    });
    const busy = await request(server).post('/orders/77/pay-now').send({ amount: 5 });
    expect(busy.status).toBe(409);
    expect(busy.headers['retry-after']).toBeDefined();
    expect((await holding).status).toBe(201);
    const paid = await request(server).post('/orders/77/pay-now').send({ amount: 5 });
    expect(paid.status).toBe(201);
    expect(paid.body.status).toBe('paid');
  });
});
