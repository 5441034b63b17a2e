import 'reflect-metadata';
import {
  Controller,
  Headers,
  HttpCode,
  Post,
  type INestApplication,
  type INestMicroservice,
} from '@nestjs/common';
import {
  ClientProxyFactory,
  MessagePattern,
  Payload,
  Transport,
  type ClientProxy,
} from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { firstValueFrom } from 'rxjs';
import { DistributedLockModule, LockService, RedisLockBackend } from '../../lib';
import {
  DistributedLockFencingModule,
  Fenced,
  fencedValue,
  FENCING_HEADER,
  fencingHeaders,
  RedisFencedStore,
  withFencing,
} from '../../lib/fencing';
import { HolderProcess } from '../support/holder-harness';
import { RedisServer } from '../support/redis-server';
import { freePort } from '../support/server-process';

const HOLDER = join(__dirname, 'fenced-holder.process.ts');

/** The downstream service's resource: what each accepted call wrote, in order. */
const ledger: string[] = [];

@Controller()
class LedgerController {
  @Post('ledger')
  @HttpCode(200)
  @Fenced()
  write(@Headers(FENCING_HEADER) grant: string) {
    ledger.push(grant);
    return { ok: true };
  }

  @Post('orders')
  @HttpCode(200)
  @Fenced({ keys: /^order:/ })
  order() {
    return { ok: true };
  }

  @MessagePattern('ledger')
  @Fenced()
  message(@Payload() data: { entry: string }) {
    ledger.push(data.entry);
    return { ok: true };
  }
}

/**
 * Two Nest apps and a third in a child process: the downstream "ledger" service (HTTP and a TCP
 * microservice, @Fenced handlers over a RedisFencedStore, no DistributedLockModule of its own)
 * and callers that take locks through DistributedLockModule on the same Redis and pass their
 * grant with fencingHeaders / withFencing.
 */
describe('@Fenced between two Nest apps (Redis fence store)', () => {
  let server: RedisServer;
  let client: Redis;
  let downstream: INestApplication;
  let micro: INestMicroservice;
  let rpc: ClientProxy;
  let upstream: INestApplication;
  let url: string;
  const holders: HolderProcess[] = [];

  const post = async (path: string, headers: Record<string, string>) => {
    const res = await fetch(`${url}/${path}`, { method: 'POST', headers });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis({ host: '127.0.0.1', port: server.port });
    const fencing = DistributedLockFencingModule.forRoot({
      store: new RedisFencedStore({ client }),
    });
    const ref = await Test.createTestingModule({
      imports: [fencing],
      controllers: [LedgerController],
    }).compile();
    downstream = ref.createNestApplication({ logger: false });
    await downstream.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(downstream.getHttpServer().address() as AddressInfo).port}`;
    const port = await freePort();
    micro = ref.createNestMicroservice({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false,
    });
    await micro.listen();
    rpc = ClientProxyFactory.create({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
    });
    await rpc.connect();
    const up = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({
          backend: new RedisLockBackend({ client }),
          keyPrefix: 'fenced-test:',
        }),
      ],
    }).compile();
    upstream = up.createNestApplication({ logger: false });
    await upstream.init();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(holders.map((h) => h.kill()));
    await rpc?.close();
    await micro?.close();
    await downstream?.close();
    await upstream?.close();
    client?.disconnect();
    await server?.destroy();
  });

  it('a call without a grant, or with a malformed one, is 400 FENCING_TOKEN_MISSING', async () => {
    expect(await post('ledger', {})).toMatchObject({
      status: 400,
      body: { code: 'FENCING_TOKEN_MISSING' },
    });
    expect(await post('ledger', { [FENCING_HEADER]: 'twelve' })).toMatchObject({
      status: 400,
      body: { code: 'FENCING_TOKEN_MISSING' },
    });
    // keys: /^order:/ accepts only the order locks' tokens.
    expect(await post('orders', fencingHeaders({ key: 'user:1', token: 5n }))).toMatchObject({
      status: 400,
    });
    expect((await post('orders', fencingHeaders({ key: 'order:1', token: 5n }))).status).toBe(200);
  });

  it('a holder paused past its ttl (SIGSTOP) resumes and its call is refused with 409 STALE_FENCING_TOKEN', async () => {
    const key = 'ledger:1';
    const config = JSON.stringify({ port: server.port, url: `${url}/ledger`, resource: key });
    const holder = HolderProcess.start(HOLDER, ['guard', config, key, '600']);
    holders.push(holder);
    const held = await holder.next('held', 0, 90_000);
    expect(held).toMatchObject({ status: 200 });
    holder.stop();
    const locks = upstream.get(LockService);
    const next = await locks.acquire(key, { ttl: 5_000, wait: 20_000 });
    expect(next.fencingToken).toBeGreaterThan(BigInt(held.token as string));
    expect((await post('ledger', fencingHeaders(next))).status).toBe(200);
    holder.cont();
    holder.send({ type: 'write' });
    expect(await holder.next('wrote')).toMatchObject({
      status: 409,
      body: { statusCode: 409, code: 'STALE_FENCING_TOKEN' },
    });
    // The ledger holds the paused holder's first call and the new holder's, not the stale one.
    const calls = ledger.filter((g) => g.includes(`; key=${encodeURIComponent(key)}; grant=`));
    expect(calls.map((g) => g.split(';')[0])).toEqual([
      String(held.token),
      next.fencingToken.toString(),
    ]);
    await next.release();
  }, 150_000);

  it("tokens of two keys never interfere: each key's calls are fenced on their own", async () => {
    const locks = upstream.get(LockService);
    const b = await locks.acquire('ledger:b');
    const a = await locks.acquire('ledger:a'); // taken after b: a larger token
    expect(a.fencingToken).toBeGreaterThan(b.fencingToken);
    expect((await post('ledger', fencingHeaders(a))).status).toBe(200);
    expect((await post('ledger', fencingHeaders(b))).status).toBe(200);
    expect((await post('ledger', fencingHeaders(b))).status).toBe(200);
    await Promise.all([a.release(), b.release()]);
  });

  it('with both modules in one app, a stale write thrown by a handler is 409 STALE_FENCING_TOKEN', async () => {
    const store = new RedisFencedStore({ client });
    @Controller()
    class WriteController {
      @Post('write')
      async write() {
        return { ok: fencedValue(await store.set('both:1', 1n, 'late')) };
      }
    }
    const ref = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({ backend: new RedisLockBackend({ client }) }),
        DistributedLockFencingModule.forRoot({ store }),
      ],
      controllers: [WriteController],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      expect((await store.set('both:1', 2n, 'current')).accepted).toBe(true);
      const port = (app.getHttpServer().address() as AddressInfo).port;
      const res = await fetch(`http://127.0.0.1:${port}/write`, { method: 'POST' });
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({ code: 'STALE_FENCING_TOKEN' });
    } finally {
      await app.close();
    }
  });

  it('over a TCP microservice: withFencing carries the grant; a stale one gets { code: STALE_FENCING_TOKEN }', async () => {
    const send = (data: object) =>
      firstValueFrom(rpc.send('ledger', data)).then(
        (ok: unknown) => ({ ok }),
        (error: unknown) => ({ error }),
      );
    expect(await send(withFencing({ entry: 'm1' }, { key: 'rpc:1', token: 20n }))).toEqual({
      ok: { ok: true },
    });
    expect(await send(withFencing({ entry: 'm0' }, { key: 'rpc:1', token: 19n }))).toEqual({
      error: expect.objectContaining({ code: 'STALE_FENCING_TOKEN' }),
    });
    expect(await send({ entry: 'none' })).toEqual({
      error: expect.objectContaining({ code: 'FENCING_TOKEN_MISSING' }),
    });
    expect(ledger).toContain('m1');
    expect(ledger).not.toContain('m0');
  });
});
