import type { IDeleteRangeRequest, IDeleteRangeResponse, IKeyValue, ILeaseGrantResponse, ILeaseKeepAliveResponse, IRangeRequest, IRangeResponse, ITxnRequest, ITxnResponse } from 'etcd3';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/**
 * The parts of an etcd3 `Etcd3` client this backend uses, typed structurally so the package never
 * loads the driver (etcd3 is an optional peer dependency; only its types are imported). We use
 * the raw gRPC clients (`kv`, `leaseClient`) rather than the builders because the lock needs
 * create-revision filters and sorting in one transaction, and per-call deadlines.
 */
export type EtcdKeyValue = IKeyValue;
export type EtcdRangeRequest = IRangeRequest;
export type EtcdRangeResponse = IRangeResponse;
export type EtcdTxnResponse = ITxnResponse;

export interface EtcdCallOptions {
  /** Absolute deadline (Date ms) after which gRPC gives up on the call. */
  deadline?: number;
}

export interface EtcdKeepAliveStream {
  write(item: { ID: string }): void;
  end(): void;
  cancel(): void;
  on(event: 'data', fn: (res: ILeaseKeepAliveResponse) => void): this;
  on(event: 'error', fn: (err: Error) => void): this;
  on(event: 'end', fn: () => void): this;
}

export interface EtcdWatcherLike {
  on(event: 'connected', fn: (res: unknown) => void): this;
  on(event: 'disconnected', fn: (err: unknown) => void): this;
  on(event: 'error', fn: (err: unknown) => void): this;
  on(event: 'delete', fn: (kv: IKeyValue) => void): this;
  cancel(): Promise<void>;
}

export interface EtcdWatchBuilderLike {
  key(key: string | Buffer): EtcdWatchBuilderLike;
  startRevision(revision: string): EtcdWatchBuilderLike;
  only(...operations: 'delete'[]): EtcdWatchBuilderLike;
  /** Creates and attaches the watcher without waiting for the server (we wait on its events). */
  watcher(): EtcdWatcherLike;
}

/** What we need of an etcd3 `Etcd3` client (the user creates it, keeps owning it and closes it). */
export interface EtcdClientLike {
  readonly kv: {
    range(req: IRangeRequest, options?: EtcdCallOptions): Promise<IRangeResponse>;
    txn(req: ITxnRequest, options?: EtcdCallOptions): Promise<ITxnResponse>;
    deleteRange(req: IDeleteRangeRequest, options?: EtcdCallOptions): Promise<IDeleteRangeResponse>;
  };
  readonly leaseClient: {
    leaseGrant(req: { TTL: number }, options?: EtcdCallOptions): Promise<ILeaseGrantResponse>;
    leaseRevoke(req: { ID: string }, options?: EtcdCallOptions): Promise<unknown>;
    leaseKeepAlive(): Promise<EtcdKeepAliveStream>;
  };
  watch(): EtcdWatchBuilderLike;
}

/** Rejects anything that is not an un-namespaced etcd3 client, naming what is expected. */
export function checkEtcdClient(client: unknown): EtcdClientLike {
  const c = client as Partial<Record<string, unknown>> | null;
  const kv = c?.kv as Record<string, unknown> | undefined;
  const lease = c?.leaseClient as Record<string, unknown> | undefined;
  const ok = c !== null && typeof c === 'object' && typeof kv?.txn === 'function' && typeof kv?.range === 'function'
    && typeof lease?.leaseGrant === 'function' && typeof lease?.leaseKeepAlive === 'function' && typeof c.watch === 'function';
  if (!ok) throw new InvalidLockOptionsError('client', client, 'an etcd3 Etcd3 client (new Etcd3({ hosts }))');
  // A Namespace applies its prefix in the builders only, not in the raw gRPC calls we make: refuse it.
  const prefix = c.prefix as Buffer | undefined;
  if (Buffer.isBuffer(prefix) && prefix.length > 0) {
    throw new InvalidLockOptionsError('client', client, `an Etcd3 client without a namespace (use the "prefix" option instead of client.namespace(${JSON.stringify(prefix.toString())}))`);
  }
  return c as unknown as EtcdClientLike;
}
