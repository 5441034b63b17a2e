import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../../sample-app/app.module';

/**
 * Issue 14.8 over HTTP: `/orders/1`, `/01`, `/1.0` and `/%201` took four different locks and paid
 * order 1 four times. The sample app's routes now parse the id (ParseIntPipe) and lock `<id:int>`.
 */
describe('sample app: one id, one lock (issue 14.8)', () => {
  let app: INestApplication;
  beforeAll(async () => {
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => app?.close());

  it('pays order 31 once however its id is spelled; other spellings are a 400', async () => {
    const server = app.getHttpServer();
    const statuses: number[] = [];
    for (const id of ['31', '031', '31.0', '%2031', '3.1e1']) {
      statuses.push((await request(server).post(`/orders/${id}/pay`).send({ amount: 10 })).status);
    }
    expect(statuses).toEqual([201, 201, 400, 400, 400]);
    const order = await request(server).get('/orders/31');
    expect(order.body.history).toHaveLength(1);
  });

  it('inventory skus are canonicalised: SKU-5 and sku-5 are one item and one lock', async () => {
    const server = app.getHttpServer();
    await request(server).put('/inventory/SKU-5').send({ delta: 2 });
    await request(server).put('/inventory/sku-5').send({ delta: 3 });
    expect((await request(server).get('/inventory/Sku-5')).body.quantity).toBe(5);
    expect((await request(server).get('/inventory/sku_5')).status).toBe(400);
  });
});
