import type { LockLogLevel } from '../observability/lock-logger';
import type { LockTelemetryOptions } from '../observability/lock-telemetry';

/** Module options of the operations layer (logs, OpenTelemetry, event-emitter, start-up check). */
export interface LockObservabilityOptions {
  /**
   * Lock log lines through Nest's Logger (context 'DistributedLock'): the least severe level
   * written ('debug' adds every grant and release), or false for none. Default 'log'.
   */
  logging?: LockLogLevel | false;
  /**
   * OpenTelemetry spans and metrics when @opentelemetry/api is installed (a no-op otherwise):
   * true (default), false, or options.
   */
  telemetry?: boolean | LockTelemetryOptions;
  /**
   * Re-emit lock events on @nestjs/event-emitter as 'lock.<type>' when it is installed. Default
   * true.
   */
  eventEmitter?: boolean;
  /**
   * Probe every backend at start-up: 'warn' (default) logs a backend that cannot be reached, with
   * the cause, and starts; 'fail' stops the application; false skips the probe.
   */
  checkOnStartup?: 'fail' | 'warn' | false;
}
