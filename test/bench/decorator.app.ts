import 'reflect-metadata';
import {
  ConflictException,
  Controller,
  Get,
  Inject,
  Module,
  Optional,
  Param,
} from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import type { LockBackend } from '../../lib';

// DECORATOR_LIB names another build of the library (e.g. a tsc build of main: /tmp/base/dist/lib)
// for an A/B of app CPU per request (decorator.ab.ts); default: this tree's lib.
const lib = require(process.env.DECORATOR_LIB ?? '../../lib') as typeof import('../../lib');
const { DistributedLockModule, Locked, MemoryLockBackend, RedisLockBackend } = lib;

/**
 * The HTTP app of scenario 3, run in its own process so the load generator does not share its
 * event loop: Express (@nestjs/platform-express), one route with @Locked on a per-request key and
 * the same route without it, and (Redis) a route that makes one PING round trip. `node -r ts-node/register/transpile-only decorator.app.ts memory`
 * or `... redis <port>`; prints `PORT <n>` when listening. `... bare [<port>]`: the same app WITHOUT
 * DistributedLockModule (only the plain, async and, given a Redis port, manual routes answer): what
 * the module costs a route that takes no lock, and what the lock's two round trips cost written by
 * hand (the HTTP layer scenario).
 */
const REDIS = 'BENCH_REDIS';
const RELEASE =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

@Controller()
class BenchController {
  constructor(@Optional() @Inject(REDIS) private readonly redis?: Redis) {}

  @Get('plain/:id')
  plain(@Param('id') id: string) {
    return { id };
  }

  /** The same answer from an async handler: what an async route costs without the lock. */
  @Get('async/:id')
  async asyncPlain(@Param('id') id: string) {
    return { id };
  }

  @Get('locked/:id')
  @Locked('item:<id>')
  async locked(@Param('id') id: string) {
    return { id };
  }

  /**
   * The lock's two Redis round trips written by hand, without the module: SET NX PX with a random
   * owner, then a compare-and-delete script (the usual single-instance recipe; no fencing, no
   * renewal, no reentrancy, no waiting).
   */
  @Get('manual/:id')
  async manual(@Param('id') id: string) {
    const key = `lock:item:${id}`;
    const owner = randomBytes(16).toString('hex');
    if ((await this.redis!.set(key, owner, 'PX', 5_000, 'NX')) !== 'OK')
      throw new ConflictException();
    try {
      return { id };
    } finally {
      await this.redis!.eval(RELEASE, 1, key, owner);
    }
  }

  /** One Redis round trip (PING) and no lock: what one round trip costs as this process sees it. */
  @Get('ping/:id')
  async ping(@Param('id') id: string) {
    await this.redis?.ping();
    return { id };
  }
}

async function main(): Promise<void> {
  const [kind, port] = process.argv.slice(2);
  let backend: LockBackend;
  let client: Redis | undefined;
  if (port) {
    client = new Redis({ port: Number(port), host: '127.0.0.1', maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
  }
  if (kind === 'redis') {
    backend = new RedisLockBackend({ client: client! });
  } else {
    backend = new MemoryLockBackend();
  }

  @Module({
    imports: kind === 'bare' ? [] : [DistributedLockModule.forRoot({ backend })],
    controllers: [BenchController],
    providers: client ? [{ provide: REDIS, useValue: client }] : [],
  })
  class BenchModule {}

  const app = await NestFactory.create(BenchModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  process.stdout.write(`PORT ${address.port}\n`);
  process.on('SIGTERM', () => void app.close().finally(() => process.exit(0)));
  if (process.env.CPU_PROFILE) profileOnSignal(process.env.CPU_PROFILE);
}

/**
 * CPU_PROFILE=<file>: SIGUSR2 starts V8's CPU profiler (after a warm-up, so start-up and compilation
 * stay out of it), a second SIGUSR2 writes the profile to <file> (Chrome DevTools' .cpuprofile).
 */
function profileOnSignal(file: string): void {
  const session = new Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.enable', () => session.post('Profiler.start'));
      return;
    }
    session.post('Profiler.stop', (error, result) => {
      if (!error) writeFileSync(file, JSON.stringify(result.profile));
      process.stdout.write(`PROFILE ${error ? error.message : file}\n`);
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
