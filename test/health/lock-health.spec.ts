import 'reflect-metadata';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import request from 'supertest';
import { DistributedLockModule, MemoryLockBackend, RedisLockBackend } from '../../lib';
import { DistributedLockHealthIndicator } from '../../lib/operations';
import { RedisServer } from '../support/redis-server';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: DistributedLockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }

  @Get('redis')
  @HealthCheck()
  redisOnly() {
    return this.health.check([() => this.locks.isHealthy('redis-locks', 'redis')]);
  }
}

describe('Terminus health indicator against a real redis-server (killed and restarted)', () => {
  let server: RedisServer;
  let client: Redis;
  let app: INestApplication;

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis({
      port: server.port,
      host: '127.0.0.1',
      maxRetriesPerRequest: 1,
      retryStrategy: () => 50,
    });
    const moduleRef = await Test.createTestingModule({
      imports: [
        TerminusModule.forRoot({ logger: false }),
        DistributedLockModule.forRoot({
          backends: { default: new MemoryLockBackend(), redis: new RedisLockBackend({ client }) },
          operationTimeout: 500,
          logging: false,
        }),
      ],
      controllers: [HealthController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    client?.disconnect();
    await server?.destroy();
  });

  it('is up with one real round trip per backend', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.info.locks.backends.default).toMatchObject({
      status: 'up',
      kind: 'memory',
      via: 'ping',
    });
    expect(res.body.info.locks.backends.redis).toMatchObject({ status: 'up', kind: 'redis' });
  });

  it('is down with a reason while redis-server is dead, and up again after it restarts', async () => {
    await server.kill();
    const down = await request(app.getHttpServer()).get('/health/redis').expect(503);
    expect(down.body.status).toBe('error');
    expect(down.body.error['redis-locks'].status).toBe('down');
    expect(down.body.error['redis-locks'].message).toMatch(/^redis \(redis\): /);
    expect(down.body.error['redis-locks'].backends.redis.reason).toEqual(expect.any(String));
    const all = await request(app.getHttpServer()).get('/health').expect(503);
    expect(all.body.error.locks.backends.default.status).toBe('up');

    await server.restart();
    // The client reconnects on its own (retryStrategy 50 ms): poll the endpoint until it answers up.
    const until = Date.now() + 20_000;
    let status = 503;
    while (status !== 200 && Date.now() < until)
      status = (await request(app.getHttpServer()).get('/health/redis')).status;
    expect(status).toBe(200);
  });
});
