import { toBigInt } from '../../backend-kit';
import { lockDirs, type DirVersion } from './zookeeper.dirs';

/**
 * The part of node-zookeeper-client's Client the backend uses, typed structurally so the package
 * never loads the driver itself (it is an optional peer dependency). Numeric constants mirror the
 * driver's CreateMode / Exception / State values, which are ZooKeeper's wire values. (The driver
 * ships no type declarations, so there is nothing to `import type` from it.)
 */
export interface ZooKeeperStat {
  readonly czxid: Buffer | number | bigint;
  readonly ephemeralOwner: Buffer | number | bigint;
  /** Changes to the node's children so far (a sequential child's suffix is this, before it). */
  readonly cversion?: number;
  /** zxid of the last change to the node's children. */
  readonly pzxid?: Buffer | number | bigint;
}

export interface ZooKeeperError extends Error {
  readonly code?: number;
  getCode?(): number;
}

export interface ZooKeeperEvent {
  readonly type: number;
  readonly path: string;
}

type Callback<T> = (error: ZooKeeperError | null | undefined, result: T) => void;

export interface ZooKeeperClientLike {
  connect(): void;
  close(): void;
  create(path: string, data: Buffer | null, mode: number, callback: Callback<string>): void;
  /** With an ACL list (see driverAcl); without one the driver uses the open ACL. */
  create(
    path: string,
    data: Buffer | null,
    acls: readonly unknown[],
    mode: number,
    callback: Callback<string>,
  ): void;
  remove(
    path: string,
    version: number,
    callback: (error: ZooKeeperError | null | undefined) => void,
  ): void;
  exists(path: string, callback: Callback<ZooKeeperStat | null>): void;
  getData(
    path: string,
    watcher: ((event: ZooKeeperEvent) => void) | undefined,
    callback: (error: ZooKeeperError | null | undefined, data: Buffer, stat: ZooKeeperStat) => void,
  ): void;
  getChildren(
    path: string,
    callback: (
      error: ZooKeeperError | null | undefined,
      children: string[],
      stat?: ZooKeeperStat,
    ) => void,
  ): void;
  mkdirp(path: string, callback: Callback<string>): void;
  mkdirp(path: string, acls: readonly unknown[], callback: Callback<string>): void;
  /**
   * Adds credentials to the session (kept for reconnects). Needed only with the authInfo option.
   */
  addAuthInfo?(scheme: string, auth: Buffer): void;
  getState(): { readonly name: string; readonly code: number };
  getSessionId(): Buffer;
  getSessionTimeout(): number;
  on(
    event: 'state',
    listener: (state: { readonly name: string; readonly code: number }) => void,
  ): unknown;
  removeListener(
    event: 'state',
    listener: (state: { readonly name: string; readonly code: number }) => void,
  ): unknown;
}

export const CREATE_MODE_PERSISTENT = 0;
export const CREATE_MODE_EPHEMERAL_SEQUENTIAL = 3;
export const EVENT_NODE_DELETED = 2;
export const STATE_DISCONNECTED = 0;
export const STATE_SYNC_CONNECTED = 3;
export const STATE_CONNECTED_READ_ONLY = 5;
export const STATE_EXPIRED = -122;
export const ERR_CONNECTION_LOSS = -4;
export const ERR_NO_NODE = -101;
export const ERR_NODE_EXISTS = -110;
export const ERR_SESSION_EXPIRED = -112;

/** A listed directory's identity and children version, when the driver gave its stat. */
export function dirVersion(stat: ZooKeeperStat | undefined): DirVersion | undefined {
  if (stat?.cversion === undefined) return undefined;
  return { czxid: toBigInt(stat.czxid, 'zookeeper'), cversion: stat.cversion };
}

export function errorCode(error: unknown): number | undefined {
  const e = error as ZooKeeperError | undefined;
  if (!e) return undefined;
  if (typeof e.getCode === 'function') return e.getCode();
  return typeof e.code === 'number' ? e.code : undefined;
}

/** A directory's children and (when the driver gives it) its stat. */
export interface Listing {
  readonly children: string[];
  readonly stat?: ZooKeeperStat;
}

/** Promisified driver calls; errors keep the driver's code (see errorCode). */
export const zk: {
  create(
    c: ZooKeeperClientLike,
    path: string,
    mode: number,
    acl?: readonly unknown[],
    data?: Buffer,
  ): Promise<string>;
  remove(c: ZooKeeperClientLike, path: string): Promise<void>;
  release(c: ZooKeeperClientLike, path: string, parents?: readonly string[]): Promise<void>;
  exists(c: ZooKeeperClientLike, path: string): Promise<ZooKeeperStat | null>;
  watch(
    c: ZooKeeperClientLike,
    path: string,
    watcher: (event: ZooKeeperEvent) => void,
  ): Promise<ZooKeeperStat | null>;
  children(c: ZooKeeperClientLike, path: string): Promise<string[] | null>;
  listing(c: ZooKeeperClientLike, path: string): Promise<Listing | null>;
  read(c: ZooKeeperClientLike, path: string): Promise<{ data: Buffer; stat: ZooKeeperStat } | null>;
  mkdirp(c: ZooKeeperClientLike, path: string, acl?: readonly unknown[]): Promise<void>;
} = {
  create: (
    c: ZooKeeperClientLike,
    path: string,
    mode: number,
    acl?: readonly unknown[],
    data?: Buffer,
  ) =>
    new Promise<string>((resolve, reject) => {
      const done: Callback<string> = (e, p) => (e ? reject(e) : resolve(p));
      if (acl) c.create(path, data ?? null, acl, mode, done);
      else c.create(path, data ?? null, mode, done);
    }),
  remove: (c: ZooKeeperClientLike, path: string) =>
    new Promise<void>((resolve, reject) =>
      c.remove(path, -1, (e) => (e && errorCode(e) !== ERR_NO_NODE ? reject(e) : resolve())),
    ),
  /**
   * Deletes our node; when its lock directory is then empty, hands it (and `parents`, a
   * semaphore's path) to lockDirs.idle, which deletes it once unused for a while. The delete and a
   * listing of the directory go out back to back (one round trip; the server runs a session's
   * requests in order); the release resolves with the delete. Removing the directory blindly cost
   * a logged NOT_EMPTY transaction on every contended release.
   */
  release: (c: ZooKeeperClientLike, path: string, parents: readonly string[] = []) => {
    const dir = path.slice(0, path.lastIndexOf('/'));
    const node = zk.remove(c, path);
    c.getChildren(dir, (e, children, stat) => {
      if (e) return;
      lockDirs.listed(c, dir, dirVersion(stat));
      if (children.length === 0) lockDirs.idle(c, dir, parents);
    });
    return node;
  },
  exists: (c: ZooKeeperClientLike, path: string) =>
    new Promise<ZooKeeperStat | null>((resolve, reject) =>
      c.exists(path, (e, s) => (e ? reject(e) : resolve(s))),
    ),
  /**
   * getData with a watch: resolves the stat, or null when the node is gone (then no watch is left
   * behind).
   */
  watch: (c: ZooKeeperClientLike, path: string, watcher: (event: ZooKeeperEvent) => void) =>
    new Promise<ZooKeeperStat | null>((resolve, reject) =>
      c.getData(path, watcher, (e, _data, s) =>
        e ? (errorCode(e) === ERR_NO_NODE ? resolve(null) : reject(e)) : resolve(s),
      ),
    ),
  /** getData without a watch: the node's data and stat, or null when it is gone. */
  read: (c: ZooKeeperClientLike, path: string) =>
    new Promise<{ data: Buffer; stat: ZooKeeperStat } | null>((resolve, reject) =>
      c.getData(path, undefined, (e, data, stat) =>
        e ? (errorCode(e) === ERR_NO_NODE ? resolve(null) : reject(e)) : resolve({ data, stat }),
      ),
    ),
  children: (c: ZooKeeperClientLike, path: string) =>
    new Promise<string[] | null>((resolve, reject) =>
      c.getChildren(path, (e, list) =>
        e ? (errorCode(e) === ERR_NO_NODE ? resolve(null) : reject(e)) : resolve(list),
      ),
    ),
  /** getChildren with the directory's stat (the driver sends GET_CHILDREN2); null when gone. */
  listing: (c: ZooKeeperClientLike, path: string) =>
    new Promise<Listing | null>((resolve, reject) =>
      c.getChildren(path, (e, children, stat) => {
        if (e) return errorCode(e) === ERR_NO_NODE ? resolve(null) : reject(e);
        lockDirs.listed(c, path, dirVersion(stat));
        resolve({ children, stat });
      }),
    ),
  mkdirp: (c: ZooKeeperClientLike, path: string, acl?: readonly unknown[]) =>
    new Promise<void>((resolve, reject) => {
      const done: Callback<string> = (e) =>
        e && errorCode(e) !== ERR_NODE_EXISTS ? reject(e) : resolve();
      if (acl) c.mkdirp(path, acl, done);
      else c.mkdirp(path, done);
    }),
};
