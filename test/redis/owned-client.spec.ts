import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import Redis from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { RedisServer } from '../support/redis-server';
import { transpiledEnv, transpiledScript } from '../support/transpiled';

/**
 * A backend given `clientFactory` owns its client(s): it makes them on first use and QUITs them in
 * close(), so a process exits by itself after app.close() (no shutdown hook, no forceExit). Real
 * redis-servers; the app runs in a child process so "exits by itself" is observable.
 */
let servers: RedisServer[] = [];

beforeAll(async () => {
  servers = await Promise.all([RedisServer.start(), RedisServer.start(), RedisServer.start()]);
});

afterAll(async () => Promise.all(servers.map((s) => s.destroy())));

function runApp(
  args: string[],
): Promise<{ code: number | null; messages: string[]; exitedAfterClose: boolean }> {
  return new Promise((resolve, reject) => {
    const child = fork(transpiledScript(join(__dirname, 'owned-client.process.ts')), args, {
      execArgv: [],
      env: transpiledEnv(),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const messages: string[] = [];
    // Once the app is closed, the process has 10 s to exit on its own; otherwise it leaked a handle.
    let killer: NodeJS.Timeout | undefined;
    child.on('message', (m) => {
      messages.push(String(m));
      if (m === 'closed') killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, messages, exitedAfterClose: signal === null && messages.includes('closed') });
    });
  });
}

async function connections(server: RedisServer): Promise<number> {
  return Number(/connected_clients:(\d+)/.exec(server.cli('INFO', 'clients'))?.[1]);
}

describe('clientFactory: the backend owns and closes its client(s)', () => {
  it('Redis: the process exits by itself after app.close()', async () => {
    const result = await runApp(['redis', String(servers[0].port)]);
    expect(result.messages).toEqual(['closed']);
    expect(result.exitedAfterClose).toBe(true);
    expect(result.code).toBe(0);
  });

  it('Redlock: the process exits by itself after app.close()', async () => {
    const result = await runApp(['redlock', ...servers.map((s) => String(s.port))]);
    expect(result.messages).toEqual(['closed']);
    expect(result.exitedAfterClose).toBe(true);
    expect(result.code).toBe(0);
  });

  it('close() QUITs the clients it made and never touches a client you own', async () => {
    const before = await connections(servers[0]);
    const made: Redis[] = [];
    const owned = new RedisLockBackend({
      clientFactory: () => {
        const c = new Redis({ port: servers[0].port, host: '127.0.0.1' });
        made.push(c);
        return c;
      },
    });
    await owned.tryAcquire({
      key: 'f:1',
      owner: 'o1',
      mode: 'exclusive',
      ttl: 1_000,
      signal: new AbortController().signal,
      onLost: () => undefined,
    });
    expect(made).toHaveLength(1);
    await owned.close();
    // QUIT resolved (the server answered OK); the socket then ends on its own.
    if (made[0].status !== 'end') await once(made[0], 'end');
    expect(made[0].status).toBe('end');

    const mine = new Redis({ port: servers[0].port, host: '127.0.0.1' });
    const given = new RedisLockBackend({ client: mine });
    await given.tryAcquire({
      key: 'f:2',
      owner: 'o2',
      mode: 'exclusive',
      ttl: 1_000,
      signal: new AbortController().signal,
      onLost: () => undefined,
    });
    await given.close();
    expect(mine.status).toBe('ready');
    mine.disconnect();
    expect(await connections(servers[0])).toBeLessThanOrEqual(before + 1); // the admin redis-cli itself
  });

  it('rejects a bad factory and a factory given together with clients', async () => {
    expect(() => new RedisLockBackend({ clientFactory: 'redis://x' as never })).toThrow(
      /"clientFactory"/,
    );
    const c = new Redis({ port: servers[0].port, lazyConnect: true });
    expect(() => new RedisLockBackend({ client: c, clientFactory: () => c })).toThrow(
      /exactly one of/,
    );
    const bad = new RedlockBackend({ clientFactory: () => [c] });
    await expect(
      bad.tryAcquire({
        key: 'f:3',
        owner: 'o3',
        mode: 'exclusive',
        ttl: 1_000,
        signal: new AbortController().signal,
        onLost: () => undefined,
      }),
    ).rejects.toThrow(/"clientFactory\(\)"/);
    await bad.close();
    c.disconnect();
  });
});
