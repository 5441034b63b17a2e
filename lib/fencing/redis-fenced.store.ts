import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { FenceStore } from './fence-store.interface';
import { boundedFenceCall, fenceTimeout } from './fence-timeout';
import { staleReporter, type FenceObserverOptions } from './fencing-events';
import {
  accepted,
  refused,
  toFencingGrant,
  type FencedRefused,
  type FencedResult,
  type FencingTokenLike,
} from './fencing-token';
import { fenceKeyFor } from './redis-slot';
import { hashTag } from '../backend-kit/cluster-slot';
import { reconnectAfterSentinelRace } from '../backend-kit/sentinel-reconnect';
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
  /**
   * Prefix of the fence records' keys: non-empty, no braces. Default 'fence:'. Data keys starting
   * with it are refused (they could overwrite a fence record): give the records a prefix no data
   * key of yours has, and not your locks' keyPrefix.
   */
  prefix?: string;
  /** Ms to wait for the server's answer to a script (LockBackendUnavailableError after). 5,000. */
  timeout?: number;
  /**
   * Ms a fence record is kept after its last accepted write (default: for ever). Use it for a
   * store behind `@Fenced`, whose callers choose the keys; a holder paused for longer than this
   * could write once more.
   */
  retention?: number;
}

/** A user script prepared by `script()`, run with `run()`. */
export type RedisFencedScript = FencedScript & { readonly user: true };

/**
 * Fenced writes to Redis: each is one script (one round trip) that compares the presented token
 * with the highest token recorded for that key, records it when higher, and writes only when the
 * token is not older. A holder that was paused or partitioned past its ttl, and whose lock a newer
 * holder took, has an older token: its write is refused (a typed result, never a silent no-op).
 * The fence record lives in the key's own hash slot (`fenceKeyFor`), so the same calls work on
 * Redis Cluster; it is kept (not even `del` removes it: a forgotten fence would let a stale
 * holder write again) unless `retention` expires it or an operator calls `reset()`. It records the
 * grant with the token, so the same token from another grant is refused. No data key may start
 * with the records' prefix: writing one could reset another key's fence.
 */
export class RedisFencedStore implements FenceStore {
  private readonly client: RedisFencedClientLike;
  private readonly prefix: string;
  /** The client's own keyPrefix (ioredis adds it to every key, the fence record's too). */
  private readonly clientPrefix: string;
  private readonly report: (refusal: FencedRefused) => void;
  private readonly timeout: number;
  private readonly retention: string;

  constructor(options: RedisFencedStoreOptions) {
    if (options === null || typeof options !== 'object' || !options.client)
      throw new InvalidLockOptionsError('client', options?.client, 'an ioredis Redis or Cluster');
    const prefix = options.prefix ?? 'fence:';
    if (typeof prefix !== 'string' || prefix === '' || /[{}]/.test(prefix))
      throw new InvalidLockOptionsError('prefix', prefix, 'a non-empty string without { or }');
    this.client = options.client as RedisFencedClientLike;
    this.prefix = prefix;
    this.clientPrefix = this.client.options?.keyPrefix ?? '';
    // ioredis puts its keyPrefix before every key. A `{` there without a closed, non-empty tag in
    // the prefix itself makes the slot depend on what follows, and the fence record (named
    // differently from the data key) would land in another Cluster slot.
    if (this.clientPrefix.includes('{') && hashTag(this.clientPrefix) === undefined)
      throw new InvalidLockOptionsError(
        'keyPrefix',
        this.clientPrefix,
        "a client keyPrefix whose first { opens a complete, non-empty hash tag ('{app}:'), or none",
      );
    this.timeout = fenceTimeout(options.timeout);
    const retention = options.retention;
    if (retention !== undefined && !(Number.isSafeInteger(retention) && retention > 0))
      throw new InvalidLockOptionsError('retention', retention, 'a positive integer (ms)');
    this.retention = retention === undefined ? '' : String(retention);
    this.report = staleReporter('redis', options);
    reconnectAfterSentinelRace(this.client);
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
    return this.call(
      FENCED_SET,
      key,
      token,
      [this.checkDataKey(key)],
      [String(value), px ?? ''],
      () => 'OK' as const,
    );
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
    return this.call(FENCED_HSET, key, token, [this.checkDataKey(key)], flat, Number);
  }

  /** INCRBY key by, if `token` is current; the value is the new integer. */
  incrby(key: string, token: FencingTokenLike, by: number | bigint): Promise<FencedResult<number>> {
    if (!(typeof by === 'bigint' || Number.isSafeInteger(by)))
      throw new InvalidLockOptionsError('by', by, 'an integer');
    return this.call(FENCED_INCRBY, key, token, [this.checkDataKey(key)], [String(by)], Number);
  }

  /** DEL key, if `token` is current (the fence record stays); the value is the keys removed. */
  del(key: string, token: FencingTokenLike): Promise<FencedResult<number>> {
    return this.call(FENCED_DEL, key, token, [this.checkDataKey(key)], [], Number);
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
    for (const key of keys) this.checkDataKey(key);
    return this.call(script, keys[0], token, keys, args.map(String), (v) => v as T);
  }

  /** The fence alone: records `token` for `resource` if current (the @Fenced guard's check). */
  advance(resource: string, token: FencingTokenLike): Promise<FencedResult<void>> {
    return this.call(FENCE_ADVANCE, resource, token, [], [], () => undefined);
  }

  /** The highest token accepted for `key`, or undefined when it was never written fenced. */
  async highest(key: string): Promise<bigint | undefined> {
    const reply = await boundedFenceCall(
      this.client.eval("return redis.call('GET', KEYS[1])", 1, this.fenceKey(key)),
      this.timeout,
      'redis',
      key,
    );
    return typeof reply === 'string' ? this.tokenOf(reply, key) : undefined;
  }

  /**
   * Forgets `key`'s fence record (an operator's reset, e.g. after a forged `@Fenced` call shut the
   * real holders out); the next write of any token is accepted. True when there was one.
   */
  async reset(key: string): Promise<boolean> {
    const reply = await boundedFenceCall(
      this.client.eval("return redis.call('DEL', KEYS[1])", 1, this.fenceKey(key)),
      this.timeout,
      'redis',
      key,
    );
    return Number(reply) > 0;
  }

  /** Refuses a data key that could name a fence record (it starts with the prefix). */
  private checkDataKey(key: string): string {
    checkKey(key);
    if (key.startsWith(this.prefix))
      throw new InvalidLockOptionsError(
        'key',
        key,
        `a data key that does not start with the fence records' prefix "${this.prefix}" ` +
          '(choose another prefix for the store if your keys need it)',
      );
    return key;
  }

  private tokenOf(record: string, key: string): bigint {
    const match = /^(\d{1,19})(?::[A-Za-z0-9_-]*)?$/.exec(record);
    if (!match) throw this.notARecord(key, record);
    return BigInt(match[1]);
  }

  private notARecord(key: string, value: string): InvalidLockOptionsError {
    return new InvalidLockOptionsError(
      'prefix',
      this.prefix,
      `a prefix of its own: the fence record key ${JSON.stringify(this.fenceKey(key))} holds ` +
        `${JSON.stringify(value)}, not a fence record (another application's key, or a lock's)`,
      key,
    );
  }

  private async call<T>(
    script: FencedScript,
    resource: string,
    tokenLike: FencingTokenLike,
    keys: readonly string[],
    args: readonly (string | number)[],
    value: (reply: unknown) => T,
  ): Promise<FencedResult<T>> {
    const { token, grant } = toFencingGrant(tokenLike);
    const fence = this.fenceKey(resource);
    const params = [fence, ...keys, token.toString(), grant, this.retention, ...args];
    const numKeys = keys.length + 1;
    const reply = await boundedFenceCall(
      this.eval(script, numKeys, params),
      this.timeout,
      'redis',
      resource,
    );
    const [ok, result] = reply as [number, unknown];
    if (ok === 1) return accepted(resource, token, value(result));
    if (ok !== 0) throw this.notARecord(resource, String(result));
    const refusal = refused(resource, token, BigInt(String(result)));
    this.report(refusal);
    return refusal;
  }

  private async eval(
    script: FencedScript,
    numKeys: number,
    params: readonly (string | number)[],
  ): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha, numKeys, ...params);
    } catch (error) {
      // First use on this server (or after SCRIPT FLUSH / a restart): send the body once.
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error;
      return this.client.eval(script.lua, numKeys, ...params);
    }
  }
}

function checkKey(key: string): string {
  if (typeof key !== 'string' || key === '')
    throw new InvalidLockOptionsError('key', key, 'a non-empty Redis key');
  return key;
}
