import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { LockEngine } from '../core/lock-engine';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockObservabilityOptions } from '../interfaces/observability-options.interface';
import { LOCK_LOGGER_CONTEXT, safe } from './lock-logger';

/** The default of `checkOnStartup`: tell the operator at start-up, never refuse to start. */
export const DEFAULT_CHECK_ON_STARTUP = 'warn';

/**
 * How long an app that serves no HTTP (an application context, a script, a worker) must still be
 * running after its first grant before the shutdown-hook warning is given: a script that ends with
 * its own app.close() never needs the hooks, and never hears of them.
 */
export const SHUTDOWN_HINT_DELAY_MS = 30_000;

/**
 * What an operator should hear at start-up rather than from the first failed request:
 * - every backend is probed once (`checkOnStartup`, default 'warn'): a backend that cannot be
 *   reached (a missing or wrong URL, a factory that throws) is named with the cause, and start-up
 *   goes on ('fail' refuses to start, false skips), since a backend briefly absent is not fatal;
 * - at the first grant, if no SIGTERM listener exists (Nest's `app.enableShutdownHooks()` adds
 *   one), a single warning: without it a stopped process releases nothing and resigns no
 *   leadership, and the others wait for the ttl. An app that listens for HTTP hears it at once (it
 *   runs until it is stopped); any other hears it only if it is still running
 *   SHUTDOWN_HINT_DELAY_MS later, so a script closed by its own app.close() is not told.
 */
@Injectable()
export class LockStartupChecks implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(LOCK_LOGGER_CONTEXT);
  private stopWatching: (() => void) | undefined;
  private hint: NodeJS.Timeout | undefined;

  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Optional()
    @Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS)
    private readonly options?: LockObservabilityOptions,
    @Optional() @Inject(HttpAdapterHost) private readonly http?: HttpAdapterHost,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.watchShutdownHooks();
    await this.probeBackends(this.options?.checkOnStartup ?? DEFAULT_CHECK_ON_STARTUP);
  }

  onModuleDestroy(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
    clearTimeout(this.hint);
    this.hint = undefined;
  }

  private async probeBackends(mode: 'fail' | 'warn' | false): Promise<void> {
    if (mode === false) return;
    for (const result of await this.engine.operator.probe()) {
      if (result.status === 'up') continue;
      const reason = safe(result.reason ?? 'no answer').replace(/\.$/, '');
      if (mode === 'fail') {
        // Nest runs no shutdown hook for an app whose start-up threw: close what the backends made
        // (owned clients, their reconnect timers) now, or the refused process never exits.
        await this.engine.close();
        throw new LockBackendUnavailableError(
          result.backend,
          `the start-up check (checkOnStartup: 'fail') could not reach it: ${reason}`,
        );
      }
      this.logger.warn(
        `start-up check: backend "${safe(result.backend)}" (${result.kind}) is down: ${reason}. ` +
          'Locks on it fail (503) until it answers; the app starts anyway ' +
          "(checkOnStartup: 'fail' refuses to start, false skips this check)",
      );
    }
  }

  /** One warning at the first grant when no shutdown hook would release it on SIGTERM. */
  private watchShutdownHooks(): void {
    if (hasShutdownHook()) return;
    const stop = this.engine.events.on(() => {
      stop();
      this.stopWatching = undefined;
      if (this.serving()) return this.warnNoHooks();
      // Not a server (yet): only if still running after the delay (unref'd: it keeps nothing up).
      this.hint = setTimeout(() => this.warnNoHooks(), SHUTDOWN_HINT_DELAY_MS).unref();
    }, ['acquired']);
    this.stopWatching = stop;
  }

  private warnNoHooks(): void {
    this.hint = undefined;
    if (hasShutdownHook()) return;
    this.logger.warn(
      'locks are in use but shutdown hooks are off: on SIGTERM this process will not release ' +
        'its locks or resign its leadership (others wait for the ttl). Call ' +
        'app.enableShutdownHooks() in main.ts',
    );
  }

  /** Whether the app's HTTP server is listening (an app that runs until it is stopped). */
  private serving(): boolean {
    try {
      const server = this.http?.httpAdapter?.getHttpServer?.() as
        { listening?: boolean } | undefined;
      return server?.listening === true;
    } catch {
      return false; // an adapter without a server yet
    }
  }
}

/** Nest's enableShutdownHooks() listens to SIGTERM (among other signals) on the process. */
function hasShutdownHook(): boolean {
  return process.listenerCount('SIGTERM') > 0;
}
