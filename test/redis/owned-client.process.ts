/**
 * A Nest app whose Redis (or Redlock) backend makes its own client(s) with clientFactory. It takes a
 * lock (and waits once, so the pub/sub connection exists too), closes the app, and then must exit
 * by itself: nothing may keep the event loop alive. argv: 'redis' | 'redlock', then ports.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { DistributedLockModule, LockService, RedisLockBackend, RedlockBackend } from '../../lib';

async function main(): Promise<void> {
  const [kind, ...ports] = process.argv.slice(2);
  const connect = (port: string) => new Redis({ port: Number(port), host: '127.0.0.1' });
  const backend =
    kind === 'redis'
      ? new RedisLockBackend({ clientFactory: () => connect(ports[0]) })
      : new RedlockBackend({ clientFactory: async () => ports.map(connect) });

  @Module({ imports: [DistributedLockModule.forRoot({ backend })] })
  class AppModule {}

  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const locks = app.get(LockService);
  const held = await locks.acquire('owned:a', { ttl: 2_000 });
  // A second owner waits for the first: this opens the backend's subscriber connection(s).
  const waiting = locks.withLock('owned:a', async (h) => h.fencingToken, { wait: 5_000 });
  setTimeout(() => void held.release(), 50);
  await waiting;
  await app.close();
  process.send?.('closed');
}

main().catch((error: unknown) => {
  process.send?.(`error: ${String(error)}`);
  process.exitCode = 1;
});
