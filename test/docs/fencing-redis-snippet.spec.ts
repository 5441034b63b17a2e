import { Module, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DistributedLockModule, MemoryLockBackend } from '../../lib';
import { RedisServer } from '../support/redis-server';
import { runDocSnippet } from './doc-snippet';

/** The fencing guide's Redis example, pasted into an app: it boots and its fenced write works. */
let server: RedisServer;

beforeAll(async () => {
  server = await RedisServer.start();
});

afterAll(async () => {
  await server.destroy();
});

function wrap(service: Type): Type {
  @Module({
    imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() })],
    providers: [service],
  })
  class SnippetModule {}
  return SnippetModule;
}

describe('docs/guide/fencing.md, the Redis fenced store example', () => {
  it('injects its Redis client and credits through the fenced store', async () => {
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = `redis://127.0.0.1:${server.port}`;
    const snippet = runDocSnippet('docs/guide/fencing.md', '### Redis');
    // Its root module, or (a snippet that shows only the service) the service in a module of ours.
    const Root =
      ((Object.values(snippet) as unknown[]).find(
        (v) => typeof v === 'function' && Reflect.getMetadata('imports', v),
      ) as Type | undefined) ?? wrap(snippet.BalanceService);
    try {
      const app = (
        await Test.createTestingModule({ imports: [Root] }).compile()
      ).createNestApplication();
      await app.init();
      try {
        const service = app.get(snippet.BalanceService);
        expect(await service.credit('7', 30)).toBe(30);
        expect(await service.credit('7', 12)).toBe(42);
      } finally {
        await app.close();
      }
    } finally {
      process.env.REDIS_URL = saved;
    }
  });
});
