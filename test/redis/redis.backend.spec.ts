import Redis from 'ioredis';
import { LockEngine } from '../../lib/core/lock-engine';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import { RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import {
  ACQUIRE,
  lockKeys,
  RELEASE,
  RELEASE_UNQUEUED,
} from '../../lib/backends/redis/redis.scripts';

/** Round trips and commands, counted on a real private redis-server (INFO commandstats). */
describe('RedisLockBackend command budget', () => {
  let server: RedisServer;
  let client: Redis;
  let admin: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis({ port: server.port });
    admin = new Redis({ port: server.port });
  });

  afterAll(async () => {
    client.disconnect();
    admin.disconnect();
    await server.destroy();
  });

  async function commandCalls(): Promise<Record<string, number>> {
    const info = await admin.info('commandstats');
    const calls: Record<string, number> = {};
    for (const m of info.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) calls[m[1]] = Number(m[2]);
    delete calls.info;
    delete calls.config;
    return calls;
  }

  /** Counts the commands our client itself sends (commands run inside a script are not round trips). */
  function countSent(c: Redis): { names: string[]; restore(): void } {
    const names: string[] = [];
    const original = c.sendCommand.bind(c);
    const spy = jest.spyOn(c, 'sendCommand').mockImplementation((command, ...rest) => {
      names.push(command.name);
      return original(command, ...rest);
    });
    return { names, restore: () => spy.mockRestore() };
  }

  it('an uncontended acquire is one command and a release one command', async () => {
    const engine = new LockEngine({ backend: new RedisLockBackend({ client }) });
    await (await engine.acquire('warm-up')).release(); // loads the scripts (NOSCRIPT -> EVAL once)
    const sent = countSent(client);
    for (let i = 0; i < 50; i++) await (await engine.acquire(`k${i}`)).release();
    sent.restore();
    expect(sent.names).toEqual(Array(100).fill('evalsha'));
    await engine.close();
  });

  it('renews many held locks with one pipelined round trip per tick', async () => {
    const backend = new RedisLockBackend({ client });
    const engine = new LockEngine({ backend });
    const handles = await Promise.all(
      Array.from({ length: 300 }, (_, i) => engine.acquire(`r${i}`, { ttl: 3_000 })),
    );
    await backend.renew([]); // an empty batch is no round trip at all
    const batches: number[] = [];
    const realPipeline = client.pipeline.bind(client);
    const pipeline = jest.spyOn(client, 'pipeline').mockImplementation((...args) => {
      const pipe = realPipeline(...(args as []));
      const exec = pipe.exec.bind(pipe);
      pipe.exec = ((...a: unknown[]) => {
        batches.push(pipe.length);
        return exec(...(a as []));
      }) as typeof pipe.exec;
      return pipe;
    });
    const direct = jest.spyOn(client, 'evalsha');
    direct.mockClear();
    await new Promise((r) => setTimeout(r, 2_100)); // let the watchdog tick (every 500-1000 ms)
    pipeline.mockRestore();
    expect(batches.length).toBeGreaterThanOrEqual(1);
    // One pipeline per tick for all due locks (usually all 300); grants spread over a loaded
    // machine may split a tick's locks in two pipelines, never one round trip per lock.
    const renewed = batches.reduce((a, b) => a + b, 0);
    expect(renewed).toBeGreaterThanOrEqual(300);
    expect(renewed / batches.length).toBeGreaterThanOrEqual(150);
    expect(direct).not.toHaveBeenCalled();
    direct.mockRestore();
    expect(handles.every((h) => h.held)).toBe(true);
    await engine.close();
  });

  it('a waiter subscribes once per backend and is woken by the release, not by polling', async () => {
    const a = new LockEngine({ backend: new RedisLockBackend({ client }) });
    const waiterClient = new Redis({ port: server.port });
    const b = new LockEngine({ backend: new RedisLockBackend({ client: waiterClient }) });
    const held = await a.acquire('wake', { ttl: 30_000 });
    const waiting = b.acquire('wake', { wait: 20_000 });
    await eventually(
      async () => (await admin.zcard(lockKeys(`${a.keyPrefix}wake`).queue)) === 1,
      5_000,
      10,
    );
    await admin.config('RESETSTAT');
    const holderScripts = jest.spyOn(client, 'evalsha');
    const waiterScripts = jest.spyOn(waiterClient, 'evalsha');
    await held.release();
    const next = await waiting;
    // Direct handoff: the holder's short release script found the waiter (and changed nothing),
    // the release script granted the waiter and told it so; the message only woke the waiter, which
    // confirmed its grant with the server in ONE acquire script (a message never grants).
    expect(holderScripts.mock.calls.map((c) => c[0])).toEqual([RELEASE_UNQUEUED.sha, RELEASE.sha]);
    expect(waiterScripts.mock.calls.map((c) => c[0])).toEqual([ACQUIRE.sha]);
    expect((await commandCalls()).evalsha).toBe(3);
    holderScripts.mockRestore();
    waiterScripts.mockRestore();
    await next.release();
    await a.close();
    await b.close();
    waiterClient.disconnect();
  });

  it('rejects bad options naming them', () => {
    expect(() => new RedisLockBackend({ client: {} as never })).toThrow(InvalidLockOptionsError);
    expect(() => new RedisLockBackend({ client, channel: '' })).toThrow(/"channel"/);
    expect(() => new RedisLockBackend({ client, fenceRetention: 5 })).toThrow(/"fenceRetention"/);
    expect(() => new RedisLockBackend({ client, replicas: { count: 0, timeout: 100 } })).toThrow(
      /"replicas.count"/,
    );
    // A misspelt option fails, naming it, instead of silently keeping the default.
    expect(() => new RedisLockBackend({ client, fenceRetenton: 60_000 } as never)).toThrow(
      /fenceRetenton.*did you mean "fenceRetention"/s,
    );
    expect(() => new RedisLockBackend({} as never)).toThrow(/"client"/);
  });
});
