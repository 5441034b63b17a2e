import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LockEngine } from '../core/lock-engine';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { LockObservabilityOptions } from '../interfaces/observability-options.interface';
import { bridgeEventEmitter } from './event-emitter.bridge';
import { LOCK_LOG_LEVELS, LOCK_LOGGER_CONTEXT, subscribeLockLogger } from './lock-logger';
import { fencingEvents } from '../fencing/fencing-events';
import { instrumentFencing } from './fencing-telemetry';
import { instrumentEngine, loadOpenTelemetry } from './lock-telemetry';

/**
 * Wires the engine's events to the operations side at module init: the Nest Logger, OpenTelemetry
 * (when @opentelemetry/api is installed), the @nestjs/event-emitter bridge (when installed and
 * imported); the start-up probe is LockStartupChecks (startup-checks.ts). Options are validated
 * here, once, for forRoot and forRootAsync alike.
 */
@Injectable()
export class LockObservability implements OnModuleInit, OnModuleDestroy {
  private readonly stops: (() => void)[] = [];
  private readonly logger = new Logger(LOCK_LOGGER_CONTEXT);
  private readonly options: LockObservabilityOptions;

  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    private readonly moduleRef: ModuleRef,
    @Optional() @Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) options?: LockObservabilityOptions,
  ) {
    this.options = checkObservabilityOptions(options ?? {});
  }

  onModuleInit(): void {
    const { logging = 'log', telemetry = true, eventEmitter = true } = this.options;
    if (logging !== false)
      this.stops.push(subscribeLockLogger(this.engine.events, this.logger, logging));
    const api = telemetry === false ? undefined : loadOpenTelemetry();
    if (api && telemetry !== false)
      this.stops.push(instrumentEngine(this.engine, api, telemetry === true ? {} : telemetry));
    // Refused fenced writes of this process (every fenced store reports to `fencingEvents`).
    this.stops.push(instrumentFencing(fencingEvents, api, this.logger, logging));
    if (eventEmitter) {
      const stop = bridgeEventEmitter(this.engine.events, this.moduleRef);
      if (stop) this.stops.push(stop);
    }
  }

  onModuleDestroy(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}

function checkObservabilityOptions(o: LockObservabilityOptions): LockObservabilityOptions {
  if (o.logging !== undefined && o.logging !== false && !LOCK_LOG_LEVELS.includes(o.logging)) {
    throw new InvalidLockOptionsError(
      'logging',
      o.logging,
      `false or one of ${LOCK_LOG_LEVELS.map((l) => `'${l}'`).join(', ')}`,
    );
  }
  if (
    o.checkOnStartup !== undefined &&
    o.checkOnStartup !== false &&
    o.checkOnStartup !== 'fail' &&
    o.checkOnStartup !== 'warn'
  ) {
    throw new InvalidLockOptionsError(
      'checkOnStartup',
      o.checkOnStartup,
      "'fail', 'warn' or false",
    );
  }
  if (o.eventEmitter !== undefined && typeof o.eventEmitter !== 'boolean')
    throw new InvalidLockOptionsError('eventEmitter', o.eventEmitter, 'true or false');
  const t = o.telemetry;
  if (t !== undefined && typeof t !== 'boolean') {
    if (t === null || typeof t !== 'object')
      throw new InvalidLockOptionsError('telemetry', t, 'true, false or { keyAttribute }');
    for (const name of Object.keys(t))
      if (name !== 'keyAttribute')
        throw new InvalidLockOptionsError(
          `telemetry.${name}`,
          (t as Record<string, unknown>)[name],
          'one of keyAttribute (unknown option)',
        );
    const k = t.keyAttribute;
    if (k !== undefined && k !== 'template' && k !== 'key' && typeof k !== 'function') {
      throw new InvalidLockOptionsError(
        'telemetry.keyAttribute',
        k,
        "'template', 'key' or a function (key, template) => string",
      );
    }
  }
  return o;
}
