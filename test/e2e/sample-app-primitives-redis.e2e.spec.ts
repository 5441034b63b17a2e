import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import request from 'supertest';
import { RedisServer } from '../support/redis-server';

/**
 * The sample app's multi-key transfer (one script per grant on standalone Redis) and
 * semaphore-limited export (native Redis permits), over HTTP with LOCK_BACKEND=redis on a private
 * server.
 */
describe('sample app on Redis: transfers, exports', () => {
  let server: RedisServer;
  let app: INestApplication;
  let admin: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis({ port: server.port, host: '127.0.0.1' });
    process.env.LOCK_BACKEND = 'redis';
    process.env.REDIS_URL = `redis://127.0.0.1:${server.port}`;
    // The app picks its backend when its module is loaded.
    const { AppModule } = await import('../../sample-app/app.module');
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    admin?.disconnect();
    await server?.destroy();
    delete process.env.LOCK_BACKEND;
    delete process.env.REDIS_URL;
  });

  it('transfers between random pairs in both orders: no deadlock, no lost update', async () => {
    const http = app.getHttpServer();
    const pairs = Array.from({ length: 30 }, (_, i) => {
      const from = (i % 3) + 1;
      const to = ((i + 1 + (i % 2)) % 3) + 1;
      return from === to ? [from, (to % 3) + 1] : [from, to];
    });
    const answers = await Promise.all(
      pairs.map(([from, to]) => request(http).post(`/accounts/${from}/transfer/${to}/7`)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(201));
    const tokens = Object.values(answers[0].body.tokens as Record<string, string>);
    expect(tokens).toHaveLength(2);
    const balances = (await request(http).get('/accounts')).body as Record<string, number>;
    expect(Object.values(balances).reduce((a, b) => a + b, 0)).toBe(3_000);
  });

  it('exports: at most 3 run at once on native permits; the 4th caller gets 409 with Retry-After', async () => {
    const { ExportsController } = await import('../../sample-app/exports/exports.controller');
    const http = app.getHttpServer();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => request(http).post(`/exports/e${i}`)),
    );
    const ok = answers.filter((a) => a.status === 201);
    const busy = answers.filter((a) => a.status === 409);
    expect(ok.length).toBeGreaterThanOrEqual(3);
    expect(ok.length + busy.length).toBe(6);
    expect(busy.every((b) => b.headers['retry-after'] !== undefined)).toBe(true);
    expect(app.get(ExportsController).most).toBeLessThanOrEqual(3);
    // The grants were made on the private Redis: the key's fence counter is there, and no permit
    // is left behind now that every export ended.
    expect(await admin.keys('*exports*:s')).toEqual([]);
    const fences = await admin.keys('*exports*:f');
    expect(fences).toHaveLength(1);
  });
});
