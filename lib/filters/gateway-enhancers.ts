import type { DistributedLockModuleOptions } from '../interfaces/distributed-lock-module-options.interface';
import { RequestLifecycleInterceptor } from '../interceptors/request-lifecycle.interceptor';
import { LockExceptionFilter } from './lock-exception.filter';

/**
 * The metadata keys of `@UseFilters` and `@UseInterceptors` (the same strings in Nest 11 and
 * 12). Nest exports them only from a deep path (`constants`); we import package roots only.
 */
const EXCEPTION_FILTERS_METADATA = '__exceptionFilters__';
const INTERCEPTORS_METADATA = '__interceptors__';
/**
 * @nestjs/websockets' marker on @WebSocketGateway classes (a string, so no import of the package).
 */
const GATEWAY_METADATA = 'websockets:is_gateway';
/** @nestjs/microservices' marker on @MessagePattern / @EventPattern methods. */
const PATTERN_METADATA = 'microservices:pattern';

/**
 * Nest applies neither global filters nor global interceptors to WebSocket gateways. So that
 * gateways get the same lock error answers and client-gone cancellation as every other transport,
 * the module binds its filter and interceptor to each gateway class at compile (before Nest wires
 * the gateways at init). They go first in the class's lists: a filter or interceptor of your own on
 * the class or method is still asked before ours. Runs again for each module, replacing ours.
 * Message handlers (@MessagePattern, @EventPattern) get the interceptor on the method alone, so
 * the HTTP routes of the same controller do not run Nest's interceptor pipeline for it.
 */
export function bindToGateways(
  classes: Iterable<unknown>,
  options: DistributedLockModuleOptions,
): void {
  for (const metatype of classes) {
    if (typeof metatype !== 'function') continue;
    if (!Reflect.getMetadata(GATEWAY_METADATA, metatype)) {
      bindToMessageHandlers(metatype);
      continue;
    }
    prepend(
      metatype,
      EXCEPTION_FILTERS_METADATA,
      new LockExceptionFilter(options),
      LockExceptionFilter,
    );
    prepend(
      metatype,
      INTERCEPTORS_METADATA,
      new RequestLifecycleInterceptor(),
      RequestLifecycleInterceptor,
    );
  }
}

function bindToMessageHandlers(metatype: Function): void {
  const proto = metatype.prototype as Record<string, unknown> | undefined;
  if (!proto) return;
  for (const name of Object.getOwnPropertyNames(proto)) {
    const method = Object.getOwnPropertyDescriptor(proto, name)?.value;
    if (typeof method !== 'function' || name === 'constructor') continue;
    if (Reflect.getMetadata(PATTERN_METADATA, method) === undefined) continue;
    prepend(
      method,
      INTERCEPTORS_METADATA,
      new RequestLifecycleInterceptor(),
      RequestLifecycleInterceptor,
    );
  }
}

function prepend(target: Function, metadataKey: string, enhancer: object, kind: Function): void {
  const existing: unknown[] = Reflect.getOwnMetadata(metadataKey, target) ?? [];
  const others = existing.filter((e) => !(e instanceof kind));
  Reflect.defineMetadata(metadataKey, [enhancer, ...others], target);
}
