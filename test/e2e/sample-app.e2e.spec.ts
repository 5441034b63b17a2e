import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockService } from '../../lib';
import { AppModule } from '../../sample-app/app.module';
import { ReportJob } from '../../sample-app/jobs/report.job';
import { eventually } from '../support/eventually';

/** The sample app, booted as `npm run demo` boots it (memory backend), driven over HTTP. */
describe('sample app', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => app?.close());

  it('charges an order once when "pay" is clicked 10 times at once', async () => {
    const server = app.getHttpServer();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => request(server).post('/orders/7/pay').send({ amount: 25 })),
    );
    expect(answers.every((a) => a.status === 201)).toBe(true);
    expect(answers.filter((a) => a.body.status === 'paid')).toHaveLength(1);
    const order = await request(server).get('/orders/7');
    expect(order.body.history).toHaveLength(1);
    expect(order.body.history[0].amount).toBe(25);
  });

  it('pay-now answers 409 with Retry-After while the order is locked', async () => {
    const locks = app.get(LockService);
    const held = await locks.acquire('order:8');
    const busy = await request(app.getHttpServer()).post('/orders/8/pay-now').send({ amount: 5 });
    expect(busy.status).toBe(409);
    expect(busy.headers['retry-after']).toBeDefined();
    await held.release();
    const ok = await request(app.getHttpServer()).post('/orders/8/pay-now').send({ amount: 5 });
    expect(ok.body.status).toBe('paid');
  });

  it('inventory: concurrent updates under the exclusive lock lose nothing; reads share the lock', async () => {
    const server = app.getHttpServer();
    await Promise.all(
      Array.from({ length: 8 }, () => request(server).put('/inventory/sku-9').send({ delta: 1 })),
    );
    const reads = await Promise.all(
      Array.from({ length: 4 }, () => request(server).get('/inventory/sku-9')),
    );
    expect(reads.map((r) => r.body.quantity)).toEqual([8, 8, 8, 8]);
  });

  it('the report job runs on one caller at a time; a second trigger is skipped', async () => {
    const server = app.getHttpServer();
    const first = request(server)
      .post('/jobs/report/1')
      .then((r) => r);
    const job = app.get(ReportJob);
    await eventually(() => job.runs === 1);
    const second = await request(server).post('/jobs/report/1');
    expect(second.body).toEqual({ skipped: true });
    expect((await first).body.steps).toBe(1);
  });
});
