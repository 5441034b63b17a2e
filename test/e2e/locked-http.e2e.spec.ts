import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import request from 'supertest';
import {
  DistributedLockModule,
  LockEngine,
  LockService,
  MemoryLockBackend,
  RedisLockBackend,
  type LockBackend,
} from '../../lib';
import { lockKeys } from '../../lib/backends/redis/redis.scripts';
import { eventually } from '../support/eventually';
import { RedisServer } from '../support/redis-server';
import { Ledger, OrdersController, PaymentService, ROUTE_TAG } from './orders.fixture';

interface Variant {
  name: string;
  setup(): Promise<{
    backend: LockBackend;
    forceDelete(fullKey: string): Promise<void>;
    stop?(): Promise<void>;
    start?(): Promise<void>;
    close(): Promise<void>;
  }>;
}

const variants: Variant[] = [
  {
    name: 'memory',
    async setup() {
      const backend = new MemoryLockBackend();
      return {
        backend,
        forceDelete: async (k) => backend.forceDelete(k),
        close: async () => undefined,
      };
    },
  },
  {
    name: 'redis',
    async setup() {
      const server = await RedisServer.start();
      const client = new Redis({
        port: server.port,
        maxRetriesPerRequest: 1,
        retryStrategy: () => 100,
      });
      const admin = new Redis({
        port: server.port,
        maxRetriesPerRequest: 1,
        retryStrategy: () => 100,
      });
      client.on('error', () => undefined);
      admin.on('error', () => undefined);
      return {
        backend: new RedisLockBackend({ client }),
        forceDelete: async (k) => void (await admin.del(lockKeys(k).writer)),
        stop: () => server.kill(),
        start: () => server.start(),
        close: async () => {
          client.disconnect();
          admin.disconnect();
          await server.destroy();
        },
      };
    },
  },
];

describe.each(variants)('@Locked over HTTP ($name)', (variant) => {
  let app: INestApplication;
  let env: Awaited<ReturnType<Variant['setup']>>;
  let ledger: Ledger;
  let locks: LockService;
  let engine: LockEngine;

  beforeAll(async () => {
    env = await variant.setup();
    const moduleRef = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({
          backend: env.backend,
          defaults: { ttl: 2_000, wait: 5_000 },
          operationTimeout: 500,
        }),
      ],
      controllers: [OrdersController],
      providers: [Ledger, PaymentService],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    ledger = app.get(Ledger);
    locks = app.get(LockService);
    engine = app.get(LockEngine);
  });

  afterAll(async () => {
    await app?.close();
    await env?.close();
  });

  it('runs 30 concurrent requests on one order one at a time (racy counter ends at 30)', async () => {
    const server = app.getHttpServer();
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => request(server).post('/orders/A1/pay')),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(30).fill(201));
    expect(ledger.counters.get('A1')).toBe(30);
    expect(responses.map((r) => r.body.count).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    expect(engine.heldCount).toBe(0);
  });

  it('runs different ids in parallel (both handlers are inside at once)', async () => {
    const server = app.getHttpServer();
    const [a, b] = await Promise.all([
      request(server).post('/orders/x/meet?n=2'),
      request(server).post('/orders/y/meet?n=2'),
    ]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body).toEqual({ met: true });
  });

  it('keeps route metadata of decorators stacked above and below @Locked', () => {
    const proto = OrdersController.prototype as unknown as Record<string, Function>;
    expect(Reflect.getMetadata(ROUTE_TAG, proto.meet)).toBe('meet');
    expect(Reflect.getMetadata('__httpCode__', proto.meet)).toBe(202);
    expect(Reflect.getMetadata('path', proto.meet)).toBe(':id/meet');
    expect(Reflect.getMetadata('path', proto.pay)).toBe(':id/pay');
    expect(proto.pay.name).toBe('pay');
  });

  it("onBusy 'fail' answers 409 with Retry-After while the order is locked", async () => {
    const held = await locks.acquire('order:B1', { ttl: 5_000 });
    const res = await request(app.getHttpServer()).post('/orders/B1/fail-fast');
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('LOCK_ACQUIRE_TIMEOUT');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await held.release();
    const ok = await request(app.getHttpServer()).post('/orders/B1/fail-fast');
    expect(ok.status).toBe(201);
  });

  it("onBusy 'skip' returns without running the handler", async () => {
    const held = await locks.acquire('order:S1');
    const res = await request(app.getHttpServer()).post('/orders/S1/skip');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({});
    await held.release();
    const ran = await request(app.getHttpServer()).post('/orders/S1/skip');
    expect(ran.body).toEqual({ ran: true });
  });

  it('answers 400 for a key value that is missing, empty, an object or an array, and locks nothing', async () => {
    const server = app.getHttpServer();
    const spy = jest.spyOn(env.backend, 'tryAcquire');
    for (const body of [
      {},
      { customer: {} },
      { customer: { id: '' } },
      { customer: { id: { $ne: 1 } } },
      { customer: { id: [1, 2] } },
    ]) {
      const res = await request(server).post('/orders/by-body').send(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('LOCK_KEY_RESOLUTION');
    }
    const long = await request(server)
      .post('/orders/by-body')
      .send({ customer: { id: 'x'.repeat(10_000) } });
    expect(long.status).toBe(400);
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
    const ok = await request(server)
      .post('/orders/by-body')
      .send({ customer: { id: 'c/../{1}' } });
    expect(ok.status).toBe(201);
  });

  it('encodes request values: ids with separators never reach another order’s lock', async () => {
    const held = await locks.acquire('order:1');
    const server = app.getHttpServer();
    for (const id of ['1%2F..', '1:', '1*', '{1}', '1 ']) {
      const res = await request(server).post(`/orders/${encodeURIComponent(id)}/fail-fast`);
      expect(res.status).toBe(201);
    }
    await held.release();
  });

  it('a handler that outlives its ttl keeps its lock (watchdog) and releases it at the end', async () => {
    const server = app.getHttpServer();
    const slow = request(server)
      .post('/orders/L1/slow?ms=1200')
      .then((r) => r);
    await eventually(() => engine.heldCount > 0);
    expect(await locks.tryAcquire('order:L1')).toBeNull();
    const res = await slow;
    expect(res.status).toBe(201);
    expect(res.body.held).toBe(true);
    const after = await locks.tryAcquire('order:L1');
    expect(after).not.toBeNull();
    await after?.release();
  });

  it('a handler whose lock is deleted behind its back sees its signal abort and the request fails with 409 LOCK_LOST', async () => {
    const done = request(app.getHttpServer())
      .post('/orders/G1/hang')
      .then((r) => r);
    await eventually(() => OrdersController.released.get('G1') === false);
    await env.forceDelete('lock:order:G1');
    const r = await done;
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('LOCK_LOST');
    expect(OrdersController.released.get('G1')).toBe(true);
  });

  it('a @Locked service method called from a @Locked handler on the same key re-enters (same token, no deadlock)', async () => {
    const res = await request(app.getHttpServer()).post('/orders/R1/capture');
    expect(res.status).toBe(201);
    expect(res.body.inner).toBe(res.body.outer);
    expect(engine.heldCount).toBe(0);
  });

  it('the same service method called outside any lock takes the lock itself', async () => {
    const payments = app.get(PaymentService);
    const held = await locks.acquire('order:R2');
    const pending = payments.capture('R2');
    let settled = false;
    void pending.finally(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    await held.release();
    const { token } = await pending;
    expect(BigInt(token) > held.fencingToken).toBe(true);
  });

  it('an SSE handler holds its lock until the stream completes', async () => {
    const { port } = (
      app.getHttpServer().listen(0) as import('node:http').Server
    ).address() as AddressInfo;
    const chunks: string[] = [];
    let heldDuringStream: boolean | undefined;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        { port, path: '/orders/T1/stream', headers: { accept: 'text/event-stream' } },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', async (chunk: string) => {
            chunks.push(chunk);
            if (heldDuringStream === undefined) {
              heldDuringStream = false;
              const probe = await locks.tryAcquire('stream:T1');
              heldDuringStream = probe === null;
              await probe?.release();
            }
          });
          res.on('end', resolve);
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(chunks.join('').match(/data:/g)?.length).toBe(5);
    expect(heldDuringStream).toBe(true);
    const after = await locks.tryAcquire('stream:T1');
    expect(after).not.toBeNull();
    await after?.release();
  });

  it('an async handler returning an Observable holds the lock until it completes', async () => {
    const res = await request(app.getHttpServer()).get('/orders/T2/stream-async');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'T2', i: 4 });
    expect(engine.heldCount).toBe(0);
  });

  if (variant.name === 'redis') {
    it('answers 503 within the wait budget when Redis is down, and recovers without a restart', async () => {
      await env.stop?.();
      try {
        const res = await request(app.getHttpServer()).post('/orders/D1/fail-fast');
        expect(res.status).toBe(503);
        expect(res.body.code).toBe('LOCK_BACKEND_UNAVAILABLE');
      } finally {
        await env.start?.();
      }
      const ok = await eventually(
        async () =>
          (await request(app.getHttpServer()).post('/orders/D1/fail-fast')).status === 201,
        20_000,
        100,
      );
      expect(ok).toBe(true);
    });
  }
});
