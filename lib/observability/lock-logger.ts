import type { LoggerService } from '@nestjs/common';
import type { LockEvent, LockEventBus } from '../core/activity/lock-events';

/** Least severe level the lock logger writes; false writes nothing. */
export type LockLogLevel = 'debug' | 'log' | 'warn' | 'error';
export const LOCK_LOG_LEVELS: readonly LockLogLevel[] = ['debug', 'log', 'warn', 'error'];
export const LOCK_LOGGER_CONTEXT = 'DistributedLock';

/**
 * Subscribes a Nest logger (one with its context, e.g. `new Logger(LOCK_LOGGER_CONTEXT)`) to the
 * engine's events: grants, releases, busy answers and skips at debug; recoveries at log; lost
 * locks, failed renewals and releases, failed acquires and forced releases at warn; backend outages
 * at error. Returns the unsubscribe function. Why it lives here and not in the core: the core never
 * imports @nestjs (it only emits events).
 */
export function subscribeLockLogger(
  events: LockEventBus,
  logger: LoggerService,
  level: LockLogLevel = 'log',
): () => void {
  const min = LOCK_LOG_LEVELS.indexOf(level);
  // Subscribe only to what this level can write: at 'log' no event is built per grant or release.
  // (LEVELS holds each type's most severe level: acquireFailed is 'warn', or 'debug' for a caller's
  // mistake.)
  const types = (Object.keys(LEVELS) as LockEvent['type'][]).filter(
    (t) => LOCK_LOG_LEVELS.indexOf(LEVELS[t]) >= min,
  );
  return events.on((event) => {
    // Decide on the level before building any text: at the default level a grant costs no string.
    if (LOCK_LOG_LEVELS.indexOf(levelOf(event)) < min) return;
    const line = describeEvent(event);
    if (!line) return;
    const [lvl, message] = line;
    // The logger carries its context (`new Logger('DistributedLock')`): passing it again, or an
    // `undefined` stack, makes Nest print them as extra lines ("undefined", "DistributedLock").
    if (lvl === 'debug') logger.debug?.(message);
    else if (lvl === 'log') logger.log(message);
    else if (lvl === 'warn') logger.warn(message);
    else logger.error(message);
  }, types);
}

const LEVELS: Record<LockEvent['type'], LockLogLevel> = {
  acquired: 'debug',
  busy: 'debug',
  skipped: 'debug',
  released: 'debug',
  acquireFailed: 'warn',
  lost: 'warn',
  renewFailed: 'warn',
  releaseFailed: 'warn',
  releaseRetried: 'warn',
  backendUnavailable: 'error',
  backendRecovered: 'log',
  forceReleased: 'warn',
};

/** The releases the engine retries in the background (the others wait for their ttl). */
const RETRIED = new Set(['release', 'lost-release']);

/** How a release retried in the background ended, as the log line says it. */
const RETRY_ENDS = {
  released: 'went through',
  expired: 'gave up (its ttl passed)',
  shutdown: 'gave up at shutdown',
} as const;

/** The level of an event's log line (a caller's own mistake, or a cancel, is only debug). */
export function levelOf(e: LockEvent): LockLogLevel {
  if (e.type !== 'acquireFailed') return LEVELS[e.type];
  const code = (e.error as { code?: string })?.code;
  return code === 'INVALID_LOCK_OPTIONS' ||
    code === 'LOCK_KEY_RESOLUTION' ||
    (e.error as Error)?.name === 'AbortError'
    ? 'debug'
    : 'warn';
}

/** The level and text of one event's log line. */
export function describeEvent(e: LockEvent): [LockLogLevel, string] | undefined {
  const where = e.backend === 'default' ? '' : ` on backend ${q(e.backend)}`;
  switch (e.type) {
    case 'acquired':
      return [
        'debug',
        `acquired ${q(e.key)}${where} (${e.mode}, token ${e.fencingToken}, waited ${ms(e.waitMs)}, ${e.attempts} attempt(s)${e.contended ? ', contended' : ''}${e.reentrant ? ', re-entered' : ''})`,
      ];
    case 'busy':
      return [
        'debug',
        `${q(e.key)}${where} was busy (${e.timedOut ? `timed out after ${ms(e.waitMs)}` : 'wait: 0'}, ${e.attempts} attempt(s))`,
      ];
    case 'skipped':
      return ['debug', `${safe(e.where)} skipped: ${q(e.key)}${where} was busy (onBusy: 'skip')`];
    case 'released':
      return ['debug', `released ${q(e.key)}${where} after ${ms(e.heldMs)}`];
    case 'acquireFailed':
      return [
        levelOf(e),
        `acquire of ${q(e.key)}${where} failed after ${ms(e.waitMs)}: ${message(e.error)}`,
      ];
    case 'lost':
      return [
        'warn',
        `lost ${q(e.key)}${where} after holding it ${ms(e.heldMs)}: ${safe(e.reason)}`,
      ];
    case 'renewFailed':
      return [
        'warn',
        `renewal of ${e.keys.length} lock(s)${where} failed (${preview(e.keys)}); retrying until their validity ends: ${message(e.error)}`,
      ];
    case 'releaseFailed':
      return [
        'warn',
        `release of ${q(e.key)}${where} failed (${e.during}); ${RETRIED.has(e.during) ? 'retrying while its ttl lasts' : 'it stays held until its ttl runs out'}: ${message(e.error)}`,
      ];
    case 'releaseRetried':
      return [
        'warn',
        `release of ${q(e.key)}${where} ${RETRY_ENDS[e.outcome]} after ${e.attempts} retry(ies) in ${ms(e.retryMs)}`,
      ];
    case 'backendUnavailable':
      return ['error', `backend ${q(e.backend)} unavailable (${e.operation}): ${message(e.error)}`];
    case 'backendRecovered':
      return ['log', `backend ${q(e.backend)} answers again after ${ms(e.downMs)}`];
    case 'forceReleased':
      return [
        'warn',
        `${q(e.key)}${where} force-released by an operator (${e.freed ? 'it was held' : 'it was free'})`,
      ];
    default:
      return undefined;
  }
}

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}

function message(error: unknown): string {
  return safe(error instanceof Error ? error.message : String(error));
}

/**
 * Characters a log line must not carry raw: C0 and C1 controls (a newline forges a line), the
 * line and paragraph separators, and the bidirectional marks and overrides (they reorder what an
 * operator reads). Keys may hold all but C0 and DEL, and error messages quote keys.
 */
const UNSAFE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every UNSAFE character written as `\uXXXX`. */
export function safe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A key or name for a log line: quoted, UNSAFE characters and `"` `\\` escaped. */
function q(text: string): string {
  return `"${safe(String(text).replace(/["\\]/g, '\\$&'))}"`;
}

function preview(keys: readonly string[]): string {
  const shown = keys
    .slice(0, 3)
    .map((k) => q(k))
    .join(', ');
  return keys.length > 3 ? `${shown}, +${keys.length - 3} more` : shown;
}
