'use strict';
/**
 * The scratch app of the install test, written into a temp dir: what a user writes after
 * `nest new` and `npm install nestjs-distributed-lock ioredis @nestjs/terminus`. Kept as strings
 * (not .ts files in the repo) because it compiles against the packed tarball, not against lib/.
 * `appFiles({ esm, starter })`: an ES module app (`"type": "module"`, relative imports end in
 * `.js`, as `nest new` makes on Nest 12) or a CommonJS one; `starter`: written into an app that
 * `nest new` made, so its tsconfig files stay, its AppController and AppService stay in AppModule
 * (its own specs keep passing), and the specs of docs/guide/testing.md join its specs.
 */
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

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

const appModule = (
  js,
  starter,
) => `import { Module, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DistributedLockModule, RedisLockBackend, type LockBackend } from 'nestjs-distributed-lock';
import type { LockBackend as KitLockBackend } from 'nestjs-distributed-lock/backend-kit';
import { TerminusModule } from '@nestjs/terminus';
import { EntriesController } from './entries.controller${js}';
import { HealthController } from './health.controller${js}';
import { OrdersController } from './orders.controller${js}';
${starter ? `import { AppController } from './app.controller${js}';\nimport { AppService } from './app.service${js}';\n` : ''}
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
  controllers: [${starter ? 'AppController, ' : ''}OrdersController, HealthController, EntriesController],${starter ? '\n  providers: [AppService],' : ''}
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
import { DistributedLockHealthIndicator } from 'nestjs-distributed-lock/operations';

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

/**
 * Every subpath of the package, imported as an app does (a value, so the ES module app resolves
 * the JavaScript through `exports` at run time, and a type). /entries answers what each gave;
 * the install test also checks that this file names every subpath of package.json `exports`.
 */
const entriesController = `import { Controller, Get } from '@nestjs/common';
import { MemoryFenceStore, type FencedResult } from 'nestjs-distributed-lock/fencing';
import { LockTesting, type LockTestingApp } from 'nestjs-distributed-lock/testing';
import { LOCK_EVENT_TYPES, type LockLostEvent } from 'nestjs-distributed-lock/operations';
import { lockErrorResponse, type LockTransport } from 'nestjs-distributed-lock/integration';
import { checkOptionsObject, type BackendLock } from 'nestjs-distributed-lock/backend-kit';

/** Types from each subpath resolve too (nodenext, and node10 through typesVersions). */
export type SubpathTypes = [FencedResult<number>, LockTestingApp, LockLostEvent, LockTransport, BackendLock];

type Entries = {
  fencing: string;
  testing: string;
  operations: boolean;
  integration: string;
  backendKit: string;
};

@Controller('entries')
export class EntriesController {
  @Get()
  entries(): Entries {
    return {
      fencing: typeof MemoryFenceStore,
      testing: typeof LockTesting.hold,
      operations: LOCK_EVENT_TYPES.includes('lost'),
      integration: typeof lockErrorResponse,
      backendKit: typeof checkOptionsObject,
    };
  }
}
`;

/** The starter's own tsconfig (src and specs, strict), with the libraries' .d.ts checked too. */
const tsconfigStrict = {
  extends: './tsconfig.json',
  compilerOptions: { skipLibCheck: false, noEmit: true, incremental: false },
};

/**
 * The specs of docs/guide/testing.md (its ```ts blocks that call `describe`), as a user copies them
 * into the app: each imports only packages, so each is a file of its own.
 */
const guideSpecs = () => {
  const guide = readFileSync(join(__dirname, '..', '..', 'docs', 'guide', 'testing.md'), 'utf8');
  const blocks = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks.filter((block) => block.includes('describe('));
};

/** The app's files. tsconfig.node10.json only for CommonJS apps that are not `nest new`'s. */
exports.entriesController = entriesController;
exports.guideSpecs = guideSpecs;
exports.appFiles = ({ esm, starter }) => {
  const js = esm ? '.js' : '';
  const tsconfigs = starter
    ? { 'tsconfig.strict.json': JSON.stringify(tsconfigStrict, null, 2) }
    : {
        'tsconfig.json': JSON.stringify(tsconfig, null, 2),
        ...(esm ? {} : { 'tsconfig.node10.json': JSON.stringify(tsconfigNode10, null, 2) }),
      };
  const specs = starter
    ? Object.fromEntries(
        guideSpecs().map((spec, i) => [`src/testing-guide-${i + 1}.spec.ts`, spec]),
      )
    : {};
  return {
    ...tsconfigs,
    ...specs,
    'src/main.ts': main(js),
    'src/shutdown.ts': shutdown,
    'src/app.module.ts': appModule(js, starter),
    'src/orders.controller.ts': ordersController(js),
    'src/health.controller.ts': healthController,
    'src/entries.controller.ts': entriesController,
  };
};
