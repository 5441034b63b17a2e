import request from 'supertest';
import { Test } from '@nestjs/testing';
import { RedisServer } from '../support/redis-server';
import { runDocSnippet } from './doc-snippet';

/**
 * The README's quick start, pasted into an app: its critical section lasts long enough that the
 * 409 it describes can be seen: three concurrent payments of one order, 2 s each, wait 3 s.
 */
let server: RedisServer;

beforeAll(async () => {
  server = await RedisServer.start();
});

afterAll(async () => {
  await server.destroy();
});

describe('README quick start', () => {
  it('serialises payments of one order and answers 409 with Retry-After to the one that waits too long', async () => {
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = `redis://127.0.0.1:${server.port}`;
    try {
      const { AppModule } = runDocSnippet('README.md', '## Quick start');
      const app = (
        await Test.createTestingModule({ imports: [AppModule] }).compile()
      ).createNestApplication();
      await app.init();
      try {
        const http = app.getHttpServer();
        const pay = () => request(http).post('/orders/42/pay').send({ amount: 10 });
        const answers = await Promise.all([pay(), pay(), pay()]);
        const statuses = answers.map((a) => a.status).sort();
        expect(statuses).toEqual([201, 201, 409]);
        expect(answers.find((a) => a.status === 409)?.headers['retry-after']).toBeDefined();
      } finally {
        await app.close();
      }
    } finally {
      process.env.REDIS_URL = saved;
    }
  });
});
