import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { FenceStore } from './fence-store.interface';
import { staleReporter, type FenceObserverOptions } from './fencing-events';
import {
  accepted,
  refused,
  toFencingToken,
  type FencedRefused,
  type FencedResult,
  type FencingTokenLike,
} from './fencing-token';
import { fenceKeyFor } from './redis-slot';
import {
  FENCE_ADVANCE,
  FENCED_DEL,
  FENCED_HSET,
  FENCED_INCRBY,
  FENCED_SET,
  wrapUserScript,
  type FencedScript,
} from './redis-fenced.scripts';

/** What the store needs of an ioredis `Redis` or `Cluster` (or any client with these two). */
export interface RedisFencedClientLike {
  /** ioredis's options: a `keyPrefix` there prefixes every key the store sends. */
  readonly options?: { keyPrefix?: string };
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}

export interface RedisFencedStoreOptions extends FenceObserverOptions {
  /** Your ioredis client (Redis or Cluster); you keep owning it. */
  client: RedisFencedClientLike;
  /** Prefix of the fence records' keys (no braces). Default 'fence:'. */
  prefix?: string;
}

/** A user script prepared by `script()`, run with `run()`. */
export type RedisFencedScript = FencedScript & { readonly user: true };

/**
 * Fenced writes to Redis: each is one script (one round trip) that compares the presented token
 * with the highest token recorded for that key, records it when higher, and writes only when the
 * token is not older. A holder that was paused or partitioned past its ttl, and whose lock a newer
 * holder took, has an older token: its write is refused (a typed result, never a silent no-op).
 * The fence record lives in the key's own hash slot (`fenceKeyFor`), so the same calls work on
 * Redis Cluster; it is never expired or deleted (not even by `del`), since a forgotten fence
 * would let a stale holder write again.
 */
export class RedisFencedStore implements FenceStore {
  private readonly client: RedisFencedClientLike;
  private readonly prefix: string;
  /** The client's own keyPrefix (ioredis adds it to every key, the fence record's too). */
  private readonly clientPrefix: string;
  private readonly report: (refusal: FencedRefused) => void;

  constructor(options: RedisFencedStoreOptions) {
    if (options === null || typeof options !== 'object' || !options.client)
      throw new InvalidLockOptionsError('client', options?.client, 'an ioredis Redis or Cluster');
    const prefix = options.prefix ?? 'fence:';
    if (typeof prefix !== 'string' || /[{}]/.test(prefix))
      throw new InvalidLockOptionsError('prefix', prefix, 'a string without { or }');
    this.client = options.client as RedisFencedClientLike;
    this.prefix = prefix;
    this.clientPrefix = this.client.options?.keyPrefix ?? '';
    this.report = staleReporter('redis', options);
  }

  /**
   * The key of `key`'s fence record (same hash slot as `key`), as passed to the client. With an
   * ioredis `keyPrefix` P the server sees P + key and P + this key, so the slot is computed on
   * P + key (the record's name then holds P twice: once from the client, once in the name).
   */
  fenceKey(key: string): string {
    return fenceKeyFor(this.clientPrefix + checkKey(key), this.prefix);
  }

  /** SET key value [PX px], if `token` is current. */
  set(
    key: string,
    token: FencingTokenLike,
    value: string | number,
    options: { px?: number } = {},
  ): Promise<FencedResult<'OK'>> {
    const px = options.px;
    if (px !== undefined && !(Number.isSafeInteger(px) && px > 0))
      throw new InvalidLockOptionsError('px', px, 'a positive integer (ms)');
    return this.call(FENCED_SET, key, token, [key], [String(value), px ?? ''], () => 'OK' as const);
  }

  /** HSET key field value ..., if `token` is current; the value is the number of fields added. */
  hset(
    key: string,
    token: FencingTokenLike,
    fields: Record<string, string | number>,
  ): Promise<FencedResult<number>> {
    const flat = Object.entries(fields).flatMap(([f, v]) => [f, String(v)]);
    if (flat.length === 0)
      throw new InvalidLockOptionsError('fields', fields, 'at least one field');
    return this.call(FENCED_HSET, key, token, [key], flat, Number);
  }

  /** INCRBY key by, if `token` is current; the value is the new integer. */
  incrby(key: string, token: FencingTokenLike, by: number | bigint): Promise<FencedResult<number>> {
    if (!(typeof by === 'bigint' || Number.isSafeInteger(by)))
      throw new InvalidLockOptionsError('by', by, 'an integer');
    return this.call(FENCED_INCRBY, key, token, [key], [String(by)], Number);
  }

  /** DEL key, if `token` is current (the fence record stays); the value is the keys removed. */
  del(key: string, token: FencingTokenLike): Promise<FencedResult<number>> {
    return this.call(FENCED_DEL, key, token, [key], [], Number);
  }

  /**
   * Prepares your own Lua script to run only when the token is current. It sees KEYS and ARGV as
   * under EVAL; its reply is the accepted result's value. The fence is that of `keys[0]`; every
   * key must be in one hash slot on Cluster (use a hash tag), as for any script.
   */
  script(lua: string): RedisFencedScript {
    if (typeof lua !== 'string' || lua.trim() === '')
      throw new InvalidLockOptionsError('script', lua, 'a Lua script');
    return { ...wrapUserScript(lua), user: true };
  }

  /** Runs a script from `script()` over `keys` and `args`, if `token` is current for `keys[0]`. */
  run<T = unknown>(
    script: RedisFencedScript,
    token: FencingTokenLike,
    keys: readonly string[],
    args: readonly (string | number)[] = [],
  ): Promise<FencedResult<T>> {
    if (!script || script.user !== true)
      throw new InvalidLockOptionsError('script', script, 'a script made by store.script(lua)');
    if (!Array.isArray(keys) || keys.length === 0)
      throw new InvalidLockOptionsError('keys', keys, 'at least one key (the fenced one first)');
    return this.call(script, keys[0], token, keys, args.map(String), (v) => v as T);
  }

  /** The fence alone: records `token` for `resource` if current (the @Fenced guard's check). */
  advance(resource: string, token: FencingTokenLike): Promise<FencedResult<void>> {
    return this.call(FENCE_ADVANCE, resource, token, [], [], () => undefined);
  }

  /** The highest token accepted for `key`, or undefined when it was never written fenced. */
  async highest(key: string): Promise<bigint | undefined> {
    const reply = await this.client.eval(
      "return redis.call('GET', KEYS[1])",
      1,
      this.fenceKey(key),
    );
    return typeof reply === 'string' ? BigInt(reply) : undefined;
  }

  private async call<T>(
    script: FencedScript,
    resource: string,
    tokenLike: FencingTokenLike,
    keys: readonly string[],
    args: readonly (string | number)[],
    value: (reply: unknown) => T,
  ): Promise<FencedResult<T>> {
    const token = toFencingToken(tokenLike);
    const params = [this.fenceKey(resource), ...keys, token.toString(), ...args];
    const numKeys = keys.length + 1;
    let reply: unknown;
    try {
      reply = await this.client.evalsha(script.sha, numKeys, ...params);
    } catch (error) {
      // First use on this server (or after SCRIPT FLUSH / a restart): send the body once.
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error;
      reply = await this.client.eval(script.lua, numKeys, ...params);
    }
    const [ok, result] = reply as [number, unknown];
    if (ok === 1) return accepted(resource, token, value(result));
    const refusal = refused(resource, token, BigInt(String(result)));
    this.report(refusal);
    return refusal;
  }
}

function checkKey(key: string): string {
  if (typeof key !== 'string' || key === '')
    throw new InvalidLockOptionsError('key', key, 'a non-empty Redis key');
  return key;
}
