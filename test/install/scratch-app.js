'use strict';
/**
 * The scratch app of the install test, written into a temp dir: what a user writes after
 * `nest new` and `npm install nestjs-distributed-lock ioredis @nestjs/terminus`. Kept as strings
 * (not .ts files in the repo) because it compiles against the packed tarball, not against lib/.
 * `appFiles({ esm })`: an ES module app (`"type": "module"`, relative imports end in `.js`, as
 * `nest new` makes on Nest 12) or a CommonJS one.
 */

const compilerOptions = {
  strict: true,
  skipLibCheck: false,
  esModuleInterop: true,
  isolatedModules: true,
  declaration: true,
  removeComments: true,
  emitDecoratorMetadata: true,
  experimentalDecorators: true,
  allowSyntheticDefaultImports: true,
  target: 'ES2023',
  sourceMap: true,
  outDir: './dist',
  forceConsistentCasingInFileNames: true,
  types: ['node'],
  incremental: true, // as Nest's starter; later rows that only swap ioredis reuse the checks of unchanged files
};

const tsconfig = {
  // Nest's starter settings (nodenext: CommonJS or ESM by the package's "type"), with strict on and
  // skipLibCheck off.
  compilerOptions: {
    ...compilerOptions,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    resolvePackageJsonExports: true,
  },
  include: ['src'],
};

const tsconfigNode10 = {
  // Older projects: classic resolution, which ignores `exports` and reads `typesVersions`.
  compilerOptions: {
    ...compilerOptions,
    module: 'commonjs',
    moduleResolution: 'node',
    outDir: './dist-node10',
    noEmit: true,
    skipLibCheck: true,
    incremental: false,
  },
  include: ['src'],
};

const main = (js) => `import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module${js}';
import { onShutdownRequested } from './shutdown${js}';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  onShutdownRequested(() => void app.close());
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  console.log(\`listening on \${port}\`);
}

void bootstrap();
`;

const shutdown = `let listener: (() => void) | undefined;

export function onShutdownRequested(fn: () => void): void {
  listener = fn;
}

export function requestShutdown(): void {
  setImmediate(() => listener?.());
}
`;

const appModule = (js) => `import { Module, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DistributedLockModule, RedisLockBackend, type LockBackend } from 'nestjs-distributed-lock';
import type { LockBackend as KitLockBackend } from 'nestjs-distributed-lock/backend-kit';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller${js}';
import { OrdersController } from './orders.controller${js}';

let client: Redis | undefined;

function createBackend(): LockBackend {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is required');
  client = new Redis(url, { maxRetriesPerRequest: 2 });
  const backend: KitLockBackend = new RedisLockBackend({ client });
  return backend;
}

@Module({
  imports: [
    DistributedLockModule.forRootAsync({
      useFactory: () => ({ backend: createBackend(), defaults: { ttl: 10_000, wait: 2_000 } }),
    }),
    TerminusModule,
  ],
  controllers: [OrdersController, HealthController],
})
export class AppModule implements OnApplicationShutdown {
  // You created the client, you close it.
  async onApplicationShutdown(): Promise<void> {
    await client?.quit();
  }
}
`;

const ordersController = (js) => `import { Controller, Get, Param } from '@nestjs/common';
import { CurrentLock, Locked, type LockHandle } from 'nestjs-distributed-lock';
import { requestShutdown } from './shutdown${js}';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

@Controller()
export class OrdersController {
  private readonly entered = deferred();
  private readonly released = deferred();

  @Get('orders/:id/pay')
  @Locked('order:<id>', { onBusy: 'fail' })
  async pay(@Param('id') id: string, @CurrentLock() lock?: LockHandle): Promise<{ id: string; token: string }> {
    return { id, token: String(lock?.fencingToken) };
  }

  /** Holds order:<id> until /release is called. */
  @Get('orders/:id/hold')
  @Locked('order:<id>', { ttl: 5_000 })
  async hold(@Param('id') id: string): Promise<{ id: string; held: boolean }> {
    this.entered.resolve();
    await this.released.promise;
    return { id, held: true };
  }

  @Get('orders/:id/entered')
  async whenEntered(): Promise<{ entered: true }> {
    await this.entered.promise;
    return { entered: true };
  }

  @Get('orders/:id/release')
  release(): { released: true } {
    this.released.resolve();
    return { released: true };
  }

  @Get('shutdown')
  shutdown(): { closing: true } {
    requestShutdown();
    return { closing: true };
  }
}
`;

const healthController = `import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { DistributedLockHealthIndicator } from 'nestjs-distributed-lock';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: DistributedLockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }
}
`;

/** The app's files; `esm`: an ES module app. tsconfig.node10.json only for CommonJS apps. */
exports.appFiles = ({ esm }) => {
  const js = esm ? '.js' : '';
  return {
    'tsconfig.json': JSON.stringify(tsconfig, null, 2),
    ...(esm ? {} : { 'tsconfig.node10.json': JSON.stringify(tsconfigNode10, null, 2) }),
    'src/main.ts': main(js),
    'src/shutdown.ts': shutdown,
    'src/app.module.ts': appModule(js),
    'src/orders.controller.ts': ordersController(js),
    'src/health.controller.ts': healthController,
  };
};
