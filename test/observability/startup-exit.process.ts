/**
 * A Nest app whose backend makes its own client(s) with clientFactory, pointed at a port given in
 * argv. argv: kind ('redis' | 'redlock' | 'postgres' | 'zookeeper'), scenario ('fail': boots with
 * checkOnStartup 'fail' against a port where nothing answers, and must be refused; 'close': boots
 * with the default check, which only warns, and closes the app), then the port. Either way the process must
 * then exit by itself: nothing the backend created may keep the event loop alive.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { Pool } from 'pg';
import { createClient } from 'node-zookeeper-client';
import {
  DistributedLockModule,
  PostgresLockBackend,
  RedisLockBackend,
  RedlockBackend,
  ZooKeeperLockBackend,
  type LockBackend,
} from '../../lib';

function backendFor(kind: string, port: number): LockBackend {
  const redis = (host = '127.0.0.1') => {
    const c = new Redis({ port, host, maxRetriesPerRequest: 1 });
    c.on('error', () => undefined);
    return c;
  };
  switch (kind) {
    case 'redis':
      return new RedisLockBackend({ clientFactory: () => redis() });
    case 'redlock':
      // Three masters need three addresses: the port on three loopback addresses.
      return new RedlockBackend({
        clientFactory: () => [redis('127.0.0.1'), redis('127.0.0.2'), redis('127.0.0.3')],
      });
    case 'postgres':
      return new PostgresLockBackend({
        clientFactory: () => {
          const pool = new Pool({ host: '127.0.0.1', port, user: 'x', database: 'x' });
          pool.on('error', () => undefined);
          return pool;
        },
      });
    default:
      return new ZooKeeperLockBackend({
        clientFactory: () => createClient(`127.0.0.1:${port}`, { sessionTimeout: 2_000 }),
      });
  }
}

async function main(): Promise<void> {
  const [kind, scenario, port] = process.argv.slice(2);
  const backend = backendFor(kind, Number(port));
  @Module({
    imports: [
      DistributedLockModule.forRoot({
        backend,
        operationTimeout: 1_000,
        checkOnStartup: scenario === 'fail' ? 'fail' : 'warn',
      }),
    ],
  })
  class AppModule {}
  try {
    const app = await NestFactory.createApplicationContext(AppModule, {
      logger: false,
      abortOnError: false,
    });
    if (scenario === 'fail') process.send?.('started');
    await app.close();
    process.send?.('closed');
  } catch (error) {
    process.send?.(`refused: ${(error as Error).name}`);
  }
}

void main();
