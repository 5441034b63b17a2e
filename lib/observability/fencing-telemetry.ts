import type { LoggerService } from '@nestjs/common';
import type { FencingEvents } from '../fencing/fencing-events';
import { LOCK_METRICS, type OtelApiLike } from './lock-telemetry';
import { LOCK_LOG_LEVELS, safe, type LockLogLevel } from './lock-logger';

/**
 * The fencing layer's refusals on the operations side: a counter `lock.fencing.stale` (attribute
 * `fencing.store`: redis, postgres, mysql, memory; never the resource name, which is unbounded)
 * and one warn line per refusal. The fencing layer only reports to its FencingEvents; this is
 * where Nest and OpenTelemetry meet it. Returns the unsubscribe function.
 */
export function instrumentFencing(
  events: FencingEvents,
  api: OtelApiLike | undefined,
  logger: LoggerService | undefined,
  level: LockLogLevel | false,
): () => void {
  const stale = api?.metrics
    .getMeter('nestjs-distributed-lock')
    .createCounter(LOCK_METRICS.fencingStale, {
      description: 'Fenced writes and calls refused for a stale fencing token',
    });
  const warn = level !== false && LOCK_LOG_LEVELS.indexOf(level) <= LOCK_LOG_LEVELS.indexOf('warn');
  return events.on((e) => {
    stale?.add?.(1, { 'fencing.store': e.store });
    if (warn && logger)
      logger.warn(
        `fenced write to "${safe(e.resource)}" refused (${e.store}): ${
          e.token < e.highest
            ? `token ${e.token} < highest ${e.highest}`
            : `token ${e.token} was already written by another grant`
        }`,
      );
  });
}
