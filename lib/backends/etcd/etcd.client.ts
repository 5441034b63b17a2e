import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/**
 * The parts of an etcd3 `Etcd3` client this backend uses, typed structurally (field names as in
 * etcd's gRPC API, which etcd3 exposes unchanged) so neither the package nor its published
 * `.d.ts` ever loads `etcd3` (an optional peer dependency). We use the raw gRPC clients (`kv`,
 * `leaseClient`) rather than the builders because the lock needs create-revision filters and
 * sorting in one transaction, and per-call deadlines.
 */
export interface EtcdResponseHeader {
  /** Store revision when the request was applied (decimal string). */
  readonly revision: string;
}

export interface EtcdKeyValue {
  readonly key: Buffer;
  readonly value: Buffer;
  /** Decimal strings (revisions and lease ids exceed 2^53). */
  readonly create_revision: string;
  readonly mod_revision: string;
  readonly lease: string;
}

export interface EtcdRangeRequest {
  key: Buffer;
  range_end?: Buffer;
  limit?: number;
  sort_order?: 'None' | 'Ascend' | 'Descend';
  sort_target?: 'Key' | 'Version' | 'Create' | 'Mod' | 'Value';
  keys_only?: boolean;
  count_only?: boolean;
  /** Answered by the member from its own state (no consensus round). */
  serializable?: boolean;
  min_create_revision?: string;
  max_create_revision?: string;
}

export interface EtcdRangeResponse {
  readonly header: EtcdResponseHeader;
  readonly kvs: EtcdKeyValue[];
  readonly more: boolean;
  readonly count: string;
}

export interface EtcdDeleteRangeRequest {
  key: Buffer;
  range_end?: Buffer;
}

export interface EtcdCompare {
  key: Buffer;
  target: 'Create' | 'Version' | 'Mod' | 'Value' | 'Lease';
  result: 'Equal' | 'Greater' | 'Less' | 'NotEqual';
  create_revision?: number | string;
}

export interface EtcdRequestOp {
  request_range?: EtcdRangeRequest;
  request_put?: { key: Buffer; value: Buffer; lease?: string };
  request_delete_range?: EtcdDeleteRangeRequest;
}

export interface EtcdTxnRequest {
  compare?: EtcdCompare[];
  success?: EtcdRequestOp[];
  failure?: EtcdRequestOp[];
}

export interface EtcdTxnResponse {
  readonly header: EtcdResponseHeader;
  readonly succeeded: boolean;
  readonly responses: {
    readonly response_range: EtcdRangeResponse;
    readonly response_delete_range: { readonly deleted: string };
  }[];
}

export interface EtcdLeaseGrantResponse {
  readonly ID: string;
  /** Granted TTL in seconds (decimal string). */
  readonly TTL: string;
  readonly error: string;
}

export interface EtcdLeaseKeepAliveResponse {
  readonly ID: string;
  readonly TTL: string;
}

export interface EtcdCallOptions {
  /** Absolute deadline (Date ms) after which gRPC gives up on the call. */
  deadline?: number;
}

export interface EtcdKeepAliveStream {
  write(item: { ID: string }): void;
  end(): void;
  cancel(): void;
  on(event: 'data', fn: (res: EtcdLeaseKeepAliveResponse) => void): this;
  on(event: 'error', fn: (err: Error) => void): this;
  on(event: 'end', fn: () => void): this;
}

export interface EtcdWatcherLike {
  on(event: 'connected', fn: (res: { readonly header: EtcdResponseHeader }) => void): this;
  on(event: 'disconnected', fn: (err: unknown) => void): this;
  on(event: 'error', fn: (err: unknown) => void): this;
  on(event: 'delete', fn: (kv: EtcdKeyValue) => void): this;
  on(event: 'put', fn: (kv: EtcdKeyValue) => void): this;
  cancel(): Promise<void>;
}

export interface EtcdWatchBuilderLike {
  key(key: string | Buffer): EtcdWatchBuilderLike;
  prefix(prefix: string | Buffer): EtcdWatchBuilderLike;
  startRevision(revision: string): EtcdWatchBuilderLike;
  only(...operations: 'delete'[]): EtcdWatchBuilderLike;
  /** Creates and attaches the watcher without waiting for the server (we wait on its events). */
  watcher(): EtcdWatcherLike;
}

/** What we need of an etcd3 `Etcd3` client (the user creates it, keeps owning it and closes it). */
export interface EtcdClientLike {
  readonly kv: {
    range(req: EtcdRangeRequest, options?: EtcdCallOptions): Promise<EtcdRangeResponse>;
    txn(req: EtcdTxnRequest, options?: EtcdCallOptions): Promise<EtcdTxnResponse>;
    deleteRange(
      req: EtcdDeleteRangeRequest,
      options?: EtcdCallOptions,
    ): Promise<{ readonly deleted: string }>;
  };
  readonly leaseClient: {
    leaseGrant(req: { TTL: number }, options?: EtcdCallOptions): Promise<EtcdLeaseGrantResponse>;
    leaseRevoke(req: { ID: string }, options?: EtcdCallOptions): Promise<unknown>;
    leaseKeepAlive(): Promise<EtcdKeepAliveStream>;
  };
  watch(): EtcdWatchBuilderLike;
  /** Closes the client (called only for a client the backend created with clientFactory). */
  close?(): void;
}

/** Rejects anything that is not an un-namespaced etcd3 client, naming what is expected. */
export function checkEtcdClient(client: unknown, option = 'client'): EtcdClientLike {
  const c = client as Partial<Record<string, unknown>> | null;
  const kv = c?.kv as Record<string, unknown> | undefined;
  const lease = c?.leaseClient as Record<string, unknown> | undefined;
  const ok =
    c !== null &&
    typeof c === 'object' &&
    typeof kv?.txn === 'function' &&
    typeof kv?.range === 'function' &&
    typeof lease?.leaseGrant === 'function' &&
    typeof lease?.leaseKeepAlive === 'function' &&
    typeof c.watch === 'function';
  if (!ok)
    throw new InvalidLockOptionsError(
      option,
      client,
      'an etcd3 Etcd3 client (new Etcd3({ hosts }))',
    );
  // A Namespace applies its prefix in the builders only, not in the raw gRPC calls we make: refuse
  // it.
  const prefix = c.prefix as Buffer | undefined;
  if (Buffer.isBuffer(prefix) && prefix.length > 0) {
    throw new InvalidLockOptionsError(
      option,
      client,
      `an Etcd3 client without a namespace (use the "prefix" option instead of client.namespace(${JSON.stringify(prefix.toString())}))`,
    );
  }
  return c as unknown as EtcdClientLike;
}
