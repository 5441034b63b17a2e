import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import type { INestApplication, INestMicroservice } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { ClientProxyFactory, Transport, type ClientProxy } from '@nestjs/microservices';
import { WsAdapter } from '@nestjs/platform-ws';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import type { Server as NetServer } from 'node:net';
import { request as httpRequest, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { DistributedLockModule } from '../../../lib';
import { LockTesting } from '../../../lib/testing';
import { eventually } from '../../support/eventually';
import { freePort } from '../../support/server-process';
import { leaksNothing, redisEnv, Runs } from './items.fixture';
import {
  ItemsGateway,
  ItemsMessages,
  ItemsResolver,
  MessageArrivalGuard,
} from './messages.fixture';

let env: Awaited<ReturnType<typeof redisEnv>>;
beforeAll(async () => {
  env = await redisEnv();
});
afterAll(async () => env?.close());

/** Takes Redis down for `fn`, then brings it back and waits until `ok` answers again. */
async function whileRedisDown(fn: () => Promise<void>, ok: () => Promise<boolean>): Promise<void> {
  await env.stop();
  try {
    await fn();
  } finally {
    await env.start();
  }
  expect(await eventually(ok, 20_000, 100)).toBe(true);
}

describe('lock errors in a TCP microservice', () => {
  let ms: INestMicroservice;
  let client: ClientProxy;
  let runs: Runs;
  const send = (pattern: string, data: unknown) =>
    firstValueFrom(client.send(pattern, data)).then(
      (v) => ({ ok: v }),
      (e: unknown) => ({ error: e as Record<string, unknown> }),
    );

  beforeAll(async () => {
    const port = await freePort();
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot(env.options)],
      controllers: [ItemsMessages],
      providers: [Runs, MessageArrivalGuard],
    }).compile();
    ms = moduleRef.createNestMicroservice({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false,
    });
    await ms.listen();
    client = ClientProxyFactory.create({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
    });
    await client.connect();
    runs = ms.get(Runs);
  });

  afterAll(async () => {
    await client?.close();
    await ms?.close();
  });

  it('answers when the lock is free', async () => {
    expect(await send('item', { id: 'r1' })).toEqual({ ok: { id: 'r1' } });
  });

  it('busy: the client gets { code, message, retryAfter } (an RpcException payload)', async () => {
    const held = await LockTesting.hold(ms, 'item:r2', { ttl: 5_000 });
    const res = await send('item', { id: 'r2' });
    await held.release();
    expect(res).toEqual({
      error: {
        code: 'LOCK_ACQUIRE_TIMEOUT',
        message: 'The resource is busy; retry later',
        retryAfter: expect.any(Number),
      },
    });
    expect(runs.count.get('r2')).toBeUndefined();
  });

  it('bad key: LOCK_KEY_RESOLUTION', async () => {
    expect(await send('item', {})).toEqual({
      error: {
        code: 'LOCK_KEY_RESOLUTION',
        message: 'The request does not identify the resource to lock',
      },
    });
  });

  it('client gone: a waiting message whose client disconnects stops waiting; its handler never runs', async () => {
    const held = await LockTesting.hold(ms, 'item:r3', { ttl: 5_000 });
    const server = ms.unwrap() as NetServer;
    const port = (server.address() as AddressInfo).port;
    const connections = () => new Promise<number>((r) => server.getConnections((_e, n) => r(n)));
    const before = await connections();
    const leaving = ClientProxyFactory.create({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
    });
    await leaving.connect();
    void firstValueFrom(leaving.send('item.wait', { id: 'r3' })).catch(() => undefined);
    await eventually(() => runs.arrived.get('r3') === 1 && env.waiting() === 1);
    await leaving.close();
    await eventually(async () => (await connections()) === before && env.waiting() === 0); // gone, and out of the queue
    await held.release();
    expect(await send('item', { id: 'r3' })).toEqual({ ok: { id: 'r3' } });
    expect(runs.count.get('r3')).toBe(1);
  });

  it('backend down: LOCK_BACKEND_UNAVAILABLE, no address or driver text', async () => {
    await whileRedisDown(
      async () => {
        const res = await send('item', { id: 'r4' });
        expect(res).toEqual({
          error: {
            code: 'LOCK_BACKEND_UNAVAILABLE',
            message: 'The lock service is unavailable; retry later',
          },
        });
        leaksNothing(JSON.stringify(res), env.port);
      },
      async () => 'ok' in (await send('item', { id: 'r4' })),
    );
  });
});

describe('lock errors in a platform-ws gateway and a GraphQL resolver (Apollo)', () => {
  let app: INestApplication;
  let port: number;
  let runs: Runs;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot(env.options),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          autoSchemaFile: true,
          includeStacktraceInErrorResponses: false,
        }),
      ],
      providers: [Runs, MessageArrivalGuard, ItemsGateway, ItemsResolver],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useWebSocketAdapter(new WsAdapter(app));
    await app.listen(0, '127.0.0.1');
    port = ((app.getHttpServer() as HttpServer).address() as AddressInfo).port;
    runs = app.get(Runs);
  });

  afterAll(async () => app?.close());

  async function socket(): Promise<WebSocket> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return ws;
  }
  async function ask(event: string, data: unknown): Promise<Record<string, unknown>> {
    const ws = await socket();
    try {
      const answer = new Promise<string>((resolve) =>
        ws.once('message', (m) => resolve(String(m))),
      );
      ws.send(JSON.stringify({ event, data }));
      return JSON.parse(await answer);
    } finally {
      ws.close();
    }
  }
  async function graphql(query: string): Promise<{ status: number; body: Record<string, any> }> {
    const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  it('ws: answers when the lock is free', async () => {
    expect(await ask('item', { id: 'w1' })).toEqual({ event: 'item', data: { id: 'w1' } });
  });

  it('ws: busy sends an exception frame { code, message, retryAfter } (a WsException payload)', async () => {
    const held = await LockTesting.hold(app, 'item:w2', { ttl: 5_000 });
    const res = await ask('item', { id: 'w2' });
    await held.release();
    expect(res).toEqual({
      event: 'exception',
      data: {
        code: 'LOCK_ACQUIRE_TIMEOUT',
        message: 'The resource is busy; retry later',
        retryAfter: expect.any(Number),
      },
    });
  });

  it('ws: bad key', async () => {
    expect(await ask('item', {})).toEqual({
      event: 'exception',
      data: {
        code: 'LOCK_KEY_RESOLUTION',
        message: 'The request does not identify the resource to lock',
      },
    });
  });

  it('ws: client gone while waiting: the wait stops and the handler never runs', async () => {
    const held = await LockTesting.hold(app, 'item:w3', { ttl: 5_000 });
    const ws = await socket();
    ws.send(JSON.stringify({ event: 'item.wait', data: { id: 'w3' } }));
    await eventually(() => runs.arrived.get('w3') === 1 && env.waiting() === 1);
    ws.terminate();
    const gateway = app.get(ItemsGateway);
    await eventually(() => gateway.server.clients.size === 0 && env.waiting() === 0);
    await held.release();
    expect(await ask('item', { id: 'w3' })).toEqual({ event: 'item', data: { id: 'w3' } });
    expect(runs.count.get('w3')).toBe(1);
  });

  it('graphql: answers when the lock is free', async () => {
    const res = await graphql('{ item(id: "q1") { id } }');
    expect(res.body).toEqual({ data: { item: { id: 'q1' } } });
  });

  it('graphql: busy is a GraphQLError with extensions.code and retryAfter', async () => {
    const held = await LockTesting.hold(app, 'item:q2', { ttl: 5_000 });
    const res = await graphql('{ item(id: "q2") { id } }');
    await held.release();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0]).toMatchObject({
      message: 'The resource is busy; retry later',
      extensions: { code: 'LOCK_ACQUIRE_TIMEOUT', retryAfter: expect.any(Number) },
    });
    expect(res.body.data).toBeNull();
    expect(res.status).toBe(200); // GraphQL over HTTP: errors travel in the body
  });

  it('graphql: client gone while waiting: the wait stops and the resolver never runs', async () => {
    const held = await LockTesting.hold(app, 'item:q3', { ttl: 5_000 });
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      path: '/graphql',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      agent: false,
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ query: '{ itemWait(id: "q3") { id } }' }));
    await eventually(() => runs.arrived.get('q3') === 1 && env.waiting() === 1);
    req.destroy();
    await eventually(() => env.waiting() === 0);
    await held.release();
    expect((await graphql('{ item(id: "q3") { id } }')).body).toEqual({
      data: { item: { id: 'q3' } },
    });
    expect(runs.count.get('q3')).toBe(1);
  });

  it('graphql: bad key', async () => {
    const res = await graphql('{ item { id } }');
    expect(res.body.errors[0].extensions.code).toBe('LOCK_KEY_RESOLUTION');
  });

  it('ws and graphql: backend down, no address or driver text', async () => {
    await whileRedisDown(
      async () => {
        const frame = await ask('item', { id: 'd2' });
        expect(frame).toEqual({
          event: 'exception',
          data: {
            code: 'LOCK_BACKEND_UNAVAILABLE',
            message: 'The lock service is unavailable; retry later',
          },
        });
        const res = await graphql('{ item(id: "d3") { id } }');
        expect(res.body.errors[0].extensions.code).toBe('LOCK_BACKEND_UNAVAILABLE');
        leaksNothing(JSON.stringify([frame, res.body]), env.port);
      },
      async () => (await graphql('{ item(id: "d3") { id } }')).body.data?.item?.id === 'd3',
    );
  });
});
