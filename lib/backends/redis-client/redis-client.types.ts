/**
 * The parts of an ioredis `Redis` or `Cluster` client the Redis and Redlock backends use, typed
 * structurally so the published types never import the optional `ioredis` peer.
 */
export type RedisReply = unknown;

export interface RedisPipelineLike {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): unknown;
  eval(script: string, numKeys: number, ...args: (string | number)[]): unknown;
  wait?(numReplicas: number, timeout: number): unknown;
  asking?(): unknown;
  exec(): Promise<[Error | null, RedisReply][] | null>;
}

export interface RedisSubscriberLike {
  subscribe(channel: string): Promise<unknown>;
  on(event: 'message', cb: (channel: string, message: string) => void): unknown;
  on(event: 'ready', cb: () => void): unknown;
  on(event: 'error', cb: (error: Error) => void): unknown;
  disconnect(): void;
}

/** An ioredis `Redis` (standalone or Sentinel-managed) or `Cluster` client. */
export interface RedisClientLike {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<RedisReply>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<RedisReply>;
  pipeline(): RedisPipelineLike;
  /** ZREM (ioredis has it): a semaphore's release; without it, the release is a script. */
  zrem?(key: string, member: string): Promise<number>;
  /** Redis: `duplicate(override?)`; Cluster: `duplicate(startupNodes?, options?)`. */
  duplicate(...args: never[]): RedisSubscriberLike;
  wait?(numReplicas: number, timeout: number): Promise<number>;
  info?(section: string): Promise<string>;
  /** Closes the connection gracefully (used only for clients the backend created). */
  quit?(): Promise<unknown>;
  disconnect?(): void;
  readonly isCluster?: boolean;
  /** Cluster: slot -> ["host:port" of its primary, replicas...], as the client last saw them. */
  readonly slots?: readonly (readonly string[] | undefined)[];
  /** Cluster: reads the slot map again; `callback` once it has (or has failed to). */
  refreshSlotsCache?(callback?: (error?: Error | null) => void): void;
  /** Cluster: its connections to the nodes of `role`. */
  nodes?(role: 'master'): RedisNodeLike[];
}

/** One node connection of an ioredis Cluster client. */
export interface RedisNodeLike {
  readonly options: { readonly host?: string; readonly port?: number };
  wait?(numReplicas: number, timeout: number): Promise<number>;
  pipeline?(): RedisPipelineLike;
}

/** Methods a value must have to be accepted as a client. */
export const REDIS_CLIENT_METHODS = ['evalsha', 'eval', 'pipeline', 'duplicate'] as const;
