import {
  Inject,
  Injectable,
  Optional,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { DistributedLockError } from '../errors/distributed-lock.error';
import { FencingTokenMissingError } from '../errors/fencing-token-missing.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { StaleFencingTokenError } from '../errors/stale-fencing-token.error';
import type { FenceStore } from './fence-store.interface';
import {
  FENCING_FIELD,
  FENCING_HEADER,
  parseFencing,
  verifyFencing,
  type FencingCarrier,
} from './fencing-carrier';

/** The injection token of the FenceStore `@Fenced` uses (DistributedLockFencingModule sets it). */
export const FENCE_STORE = Symbol('nestjs-distributed-lock:fence-store');
export const FENCED_METADATA = 'nestjs-distributed-lock:fenced';
/** The injection token of the secret(s) carried grants must be signed with (optional). */
export const FENCING_SECRET = Symbol('nestjs-distributed-lock:fencing-secret');

/** One secret, or several while one is being rotated. */
export type FencingSecret = string | Buffer | readonly (string | Buffer)[];

/** The longest carried lock key a `@Fenced` handler accepts by default (as a SQL fence row). */
export const DEFAULT_FENCED_MAX_KEY_LENGTH = 255;

export interface FencedOptions {
  /**
   * The fenced resource for a call: a fixed name, or a function of the carried grant and the
   * context. Default: the carried lock key (each key's tokens fence only that key's calls).
   */
  resource?: string | ((carrier: FencingCarrier, context: ExecutionContext) => string);
  /**
   * Lock keys this handler accepts tokens of (others are rejected as missing). Default: any. A
   * regex's `g` and `y` flags are dropped (they would make `test` answer differently each call).
   */
  keys?: RegExp | ((key: string) => boolean);
  /** The longest carried lock key accepted (longer: 400). Default 255. */
  maxKeyLength?: number;
  /** The store to check (default: the one of DistributedLockFencingModule). */
  store?: FenceStore;
  /**
   * Accept only grants signed with this secret (`fencingHeaders(lock, { secret })`); default: the
   * module's `secret`, or none. A grant unsigned or signed otherwise gets 400.
   */
  secret?: FencingSecret;
}

/** Where the grant travels on each transport, and how the fence finds it. */
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
 * The receiving side of fencing between services: reads the caller's grant (lock key, token,
 * grant id) from the call, and lets the call through only when its token is current for the
 * store (higher than the highest accepted for that resource, or equal and from the same grant);
 * the token then becomes the highest. A stale call fails with StaleFencingTokenError (409
 * STALE_FENCING_TOKEN), a call without a readable grant with FencingTokenMissingError (400), a
 * store that fails or does not answer with LockBackendUnavailableError (503), before the handler
 * runs. An interceptor, not a guard: Nest runs every guard (authentication, authorisation) before
 * any interceptor, so a call another guard rejects never records its token, whatever the order of
 * the decorators. It authenticates nothing: see docs/guide/fencing.md. Use it through `@Fenced()`.
 */
@Injectable()
export class FencedInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    @Optional() @Inject(FENCE_STORE) private readonly store?: FenceStore,
    @Optional() @Inject(FENCING_SECRET) private readonly secret?: FencingSecret | null,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    await this.check(context);
    return next.handle();
  }

  private async check(context: ExecutionContext): Promise<void> {
    const options =
      this.reflector.get<FencedOptions | undefined>(FENCED_METADATA, context.getHandler()) ??
      this.reflector.get<FencedOptions | undefined>(FENCED_METADATA, context.getClass()) ??
      {};
    const where = context.getType<string>() === 'http' ? `header ${FENCING_HEADER}` : FENCING_FIELD;
    const raw = carried(context);
    if (raw === undefined) throw new FencingTokenMissingError(where, 'no fencing token was sent');
    const carrier = parseFencing(raw);
    if (!carrier)
      throw new FencingTokenMissingError(
        where,
        'expected "<token from 0 to 2^63-1>; key=<percent-encoded key>[; grant=<id>]"',
      );
    const secret = options.secret ?? this.secret ?? undefined; // the module provides null for none
    if (secret !== undefined && !verifyFencing(carrier, secret))
      throw new FencingTokenMissingError(where, 'the grant is not signed with the expected secret');
    const max = options.maxKeyLength ?? DEFAULT_FENCED_MAX_KEY_LENGTH;
    if (carrier.key.length > max)
      throw new FencingTokenMissingError(where, `the lock key is longer than ${max} characters`);
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
    let result;
    try {
      result = await store.advance(resource, carrier);
    } catch (error) {
      if (error instanceof DistributedLockError) throw error;
      throw new LockBackendUnavailableError('fence store', 'the fence check failed', {
        key: resource,
        cause: error,
      });
    }
    if (result.accepted) return;
    throw new StaleFencingTokenError({
      resource,
      token: result.token,
      highest: result.highest,
      key: carrier.key,
    });
  }
}
