import type { INestApplication, LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createServer, type Server } from 'node:net';
import Redis from 'ioredis';
import { DistributedLockModule, LockService, RedisLockBackend } from '../../lib';
import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import type { DistributedLockModuleOptions } from '../../lib/interfaces/distributed-lock-module-options.interface';

/**
 * What start-up tells an operator. Before: with REDIS_URL unset the app logged "successfully
 * started" and every request waited its full `wait` for a bare 503 (checkOnStartup defaulted to
 * false and a clientFactory is lazy); nothing said that shutdown hooks were off.
 */
class CapturingLogger implements LoggerService {
  readonly lines: { level: string; message: string; context?: string }[] = [];
  log(message: string, context?: string) {
    this.lines.push({ level: 'log', message, context });
  }
  error(message: string, _trace?: string, context?: string) {
    this.lines.push({ level: 'error', message, context });
  }
  warn(message: string, context?: string) {
    this.lines.push({ level: 'warn', message, context });
  }
  debug() {}
  verbose() {}
}

async function boot(options: Partial<DistributedLockModuleOptions>, hooks = false) {
  const logger = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), ...options })],
  })
    .setLogger(logger)
    .compile();
  const app: INestApplication = moduleRef.createNestApplication({ logger });
  if (hooks) app.enableShutdownHooks();
  await app.init();
  const ours = () => logger.lines.filter((l) => l.context === 'DistributedLock');
  return { app, logger, ours };
}

describe('start-up checks', () => {
  let closedPort: number;
  let blocker: Server;
  beforeAll(async () => {
    // A port nothing listens on: bind, note it, close.
    blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    closedPort = (blocker.address() as { port: number }).port;
    await new Promise<void>((r) => blocker.close(() => r()));
  });

  it('by default warns, naming the backend and the cause, when a clientFactory throws (REDIS_URL unset), and starts', async () => {
    const backend = new RedisLockBackend({
      clientFactory: () => {
        throw new Error('Configuration key "REDIS_URL" does not exist');
      },
    });
    const { app, ours } = await boot({ backend });
    // (The outage itself is also logged, as every backend outage is: backend "default" unavailable.)
    expect(ours().filter((l) => l.level === 'warn')).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: expect.stringMatching(
          /^start-up check: backend "default" \(redis\) is down: .*Configuration key "REDIS_URL" does not exist.*the app starts anyway/,
        ),
      }),
    ]);
    await app.close();
  });

  it('by default warns when the Redis server cannot be reached, and starts', async () => {
    const backend = new RedisLockBackend({
      clientFactory: () =>
        new Redis({
          port: closedPort,
          host: '127.0.0.1',
          maxRetriesPerRequest: 0,
          lazyConnect: true,
        }),
    });
    const { app, ours } = await boot({ backend, operationTimeout: 500 });
    // (The outage itself is also logged, as every backend outage is: backend "default" unavailable.)
    expect(ours().filter((l) => l.level === 'warn')).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: expect.stringContaining('start-up check: backend "default" (redis) is down'),
      }),
    ]);
    await app.close();
  });

  it('checkOnStartup: false stays silent; a reachable backend is silent', async () => {
    const backend = new RedisLockBackend({
      clientFactory: () => {
        throw new Error('no url');
      },
    });
    const off = await boot({ backend, checkOnStartup: false });
    expect(off.ours()).toEqual([]);
    await off.app.close();
    const up = await boot({}, true);
    expect(up.ours()).toEqual([]);
    await up.app.close();
  });

  it('warns once at the first grant when shutdown hooks are off, never when they are on', async () => {
    const off = await boot({});
    // A server: it runs until it is stopped, so it hears of the hooks at once.
    await off.app.listen(0, '127.0.0.1');
    const locks = off.app.get(LockService);
    await locks.withLock('a', async () => undefined);
    await locks.withLock('b', async () => undefined);
    const warnings = off.ours().filter((l) => l.message.includes('shutdown hooks are off'));
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: expect.stringContaining('app.enableShutdownHooks()'),
      }),
    ]);
    await off.app.close();
    const on = await boot({}, true);
    await on.app.get(LockService).withLock('a', async () => undefined);
    expect(on.ours()).toEqual([]);
    await on.app.close();
  });

  it('does not warn an application context (a script) that ends with its own app.close()', async () => {
    const logger = new CapturingLogger();
    const context = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() })],
    })
      .setLogger(logger)
      .compile();
    await context.init();
    await context.get(LockService).withLock('job', async () => undefined);
    await context.close();
    const ours = logger.lines.filter((l) => l.context === 'DistributedLock');
    expect(ours.filter((l) => l.message.includes('shutdown hooks are off'))).toEqual([]);
  });
});
