import {
  Inject,
  Injectable,
  Optional,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FencingTokenMissingError } from '../errors/fencing-token-missing.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { StaleFencingTokenError } from '../errors/stale-fencing-token.error';
import type { FenceStore } from './fence-store.interface';
import {
  FENCING_FIELD,
  FENCING_HEADER,
  parseFencing,
  type FencingCarrier,
} from './fencing-carrier';

/** The injection token of the FenceStore the guard uses (DistributedLockFencingModule sets it). */
export const FENCE_STORE = Symbol('nestjs-distributed-lock:fence-store');
export const FENCED_METADATA = 'nestjs-distributed-lock:fenced';

export interface FencedOptions {
  /**
   * The fenced resource for a call: a fixed name, or a function of the carried grant and the
   * context. Default: the carried lock key (each key's tokens fence only that key's calls).
   */
  resource?: string | ((carrier: FencingCarrier, context: ExecutionContext) => string);
  /** Lock keys this handler accepts tokens of (others are rejected as missing). Default: any. */
  keys?: RegExp | ((key: string) => boolean);
  /** The store to check (default: the one of DistributedLockFencingModule). */
  store?: FenceStore;
}

/** Where the grant travels on each transport, and how the guard finds it. */
function carried(context: ExecutionContext): unknown {
  switch (context.getType<string>()) {
    case 'http': {
      const req = context.switchToHttp().getRequest<{ headers?: Record<string, unknown> }>();
      return req?.headers?.[FENCING_HEADER];
    }
    case 'rpc': {
      const rpc = context.switchToRpc();
      const data = rpc.getData<Record<string, unknown> | undefined>();
      if (data && typeof data === 'object' && data[FENCING_FIELD] !== undefined)
        return data[FENCING_FIELD];
      // gRPC: Metadata.get(name) -> values; NATS/MQTT-style contexts: getHeaders().get(name).
      const ctx = rpc.getContext<{ get?(n: string): unknown; getHeaders?(): unknown }>();
      if (typeof ctx?.get === 'function') return ctx.get(FENCING_HEADER);
      const headers = ctx?.getHeaders?.() as { get?(n: string): unknown } | undefined;
      return typeof headers?.get === 'function' ? headers.get(FENCING_HEADER) : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * The receiving side of fencing between services: reads the caller's grant (lock key + token)
 * from the call, and lets the call through only when its token is not older than the highest the
 * store has accepted for that resource; the token then becomes the highest. A stale call fails
 * with StaleFencingTokenError (409 STALE_FENCING_TOKEN), a call without a readable grant with
 * FencingTokenMissingError (400), before the handler runs. Use it through `@Fenced()`.
 */
@Injectable()
export class FencedGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Optional() @Inject(FENCE_STORE) private readonly store?: FenceStore,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const options =
      this.reflector.get<FencedOptions | undefined>(FENCED_METADATA, context.getHandler()) ??
      this.reflector.get<FencedOptions | undefined>(FENCED_METADATA, context.getClass()) ??
      {};
    const where = context.getType<string>() === 'http' ? `header ${FENCING_HEADER}` : FENCING_FIELD;
    const raw = carried(context);
    if (raw === undefined) throw new FencingTokenMissingError(where, 'no fencing token was sent');
    const carrier = parseFencing(raw);
    if (!carrier)
      throw new FencingTokenMissingError(where, 'expected "<token>; key=<percent-encoded key>"');
    const { keys } = options;
    if (keys && !(typeof keys === 'function' ? keys(carrier.key) : keys.test(carrier.key)))
      throw new FencingTokenMissingError(
        where,
        `lock key "${carrier.key}" is not one this accepts`,
      );
    const store = options.store ?? this.store;
    if (!store)
      throw new InvalidLockOptionsError(
        'store',
        store,
        'a FenceStore: import DistributedLockFencingModule.forRoot({ store }) or pass @Fenced({ store })',
      );
    const resource =
      typeof options.resource === 'function'
        ? options.resource(carrier, context)
        : (options.resource ?? carrier.key);
    const result = await store.advance(resource, carrier.token);
    if (result.accepted) return true;
    throw new StaleFencingTokenError({
      resource,
      token: result.token,
      highest: result.highest,
      key: carrier.key,
    });
  }
}
