import type { ModuleRef } from '@nestjs/core';
import type { LockEventBus } from '../core/activity/lock-events';

/**
 * The name an event is emitted under on @nestjs/event-emitter: 'lock.acquired', 'lock.lost', ...
 */
export function lockEventName(type: string): string {
  return `lock.${type}`;
}

interface EmitterLike {
  emit(event: string, ...values: unknown[]): boolean;
}

/**
 * Re-emits every lock event on @nestjs/event-emitter's EventEmitter2 as 'lock.<type>' (so
 * `@OnEvent('lock.lost')` works), when that optional package is installed and its module is
 * imported. Loaded lazily with require: without the package this returns undefined and costs
 * nothing.
 */
export function bridgeEventEmitter(
  events: LockEventBus,
  moduleRef: ModuleRef,
): (() => void) | undefined {
  let token: unknown;
  try {
    token = (require('@nestjs/event-emitter') as { EventEmitter2: unknown }).EventEmitter2;
  } catch {
    return undefined;
  }
  let emitter: EmitterLike | undefined;
  try {
    emitter = moduleRef.get(token as never, { strict: false }) as EmitterLike;
  } catch {
    return undefined; // Installed but EventEmitterModule not imported.
  }
  if (!emitter || typeof emitter.emit !== 'function') return undefined;
  const target = emitter;
  return events.on((event) => {
    target.emit(lockEventName(event.type), event);
  });
}
