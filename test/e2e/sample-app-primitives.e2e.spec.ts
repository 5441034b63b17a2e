import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockService } from '../../lib';
import { AppModule } from '../../sample-app/app.module';
import { ExportsController } from '../../sample-app/exports/exports.controller';

/** The sample app's multi-key transfer, semaphore-limited export and leader-only worker, over HTTP. */
describe('sample app: transfers, exports, leader-only worker', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => app?.close());

  it('transfers between random pairs in both orders: no deadlock, no lost update', async () => {
    const server = app.getHttpServer();
    const pairs = Array.from({ length: 30 }, (_, i) => {
      const from = (i % 3) + 1;
      const to = ((i + 1 + (i % 2)) % 3) + 1;
      return from === to ? [from, (to % 3) + 1] : [from, to];
    });
    const answers = await Promise.all(
      pairs.map(([from, to]) => request(server).post(`/accounts/${from}/transfer/${to}/7`)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(201));
    expect(Object.keys(answers[0].body.tokens)).toHaveLength(2);
    const balances = (await request(server).get('/accounts')).body as Record<string, number>;
    expect(Object.values(balances).reduce((a, b) => a + b, 0)).toBe(3_000);
  });

  it('exports: at most 3 run at once; the 4th caller gets 409 with Retry-After at once', async () => {
    const server = app.getHttpServer();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => request(server).post(`/exports/e${i}`)),
    );
    const ok = answers.filter((a) => a.status === 201);
    const busy = answers.filter((a) => a.status === 409);
    expect(ok.length).toBeGreaterThanOrEqual(3);
    expect(ok.length + busy.length).toBe(6);
    expect(busy.every((b) => b.headers['retry-after'] !== undefined)).toBe(true);
    expect(app.get(ExportsController).most).toBeLessThanOrEqual(3);
  });

  it('the outbox worker runs only on the leader; this single instance becomes it', async () => {
    await app.get(LockService).campaign('outbox', { ttl: 5_000 }).whenLeader();
    const status = await request(app.getHttpServer()).get('/jobs/outbox');
    expect(status.body.leader).toBe(true);
    expect(typeof status.body.term).toBe('string');
  });
});
