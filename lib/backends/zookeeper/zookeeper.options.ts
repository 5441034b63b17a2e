import { checkClient, checkDuration, checkOneOf, checkOptionsObject } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { ZooKeeperClientLike } from './zookeeper.client';

/**
 * What `client` / `clientFactory` accept: a node-zookeeper-client Client, typed by
 * @types/node-zookeeper-client or not. Deliberately loose (the driver's overloaded `create` does
 * not match a structural overload set); every method the backend calls is checked at run time.
 */
export interface ZooKeeperClientInput {
  connect(): void;
  close(): void;
  getSessionTimeout(): number;
}
import {
  checkAcl,
  checkAuthInfo,
  type ZooKeeperAcl,
  type ZooKeeperAuthInfo,
} from './zookeeper.acl';
import { checkBasePath, type CuratorRecipe, type NodeNames } from './zookeeper.nodes';

export interface ZooKeeperLockBackendOptions {
  /**
   * A node-zookeeper-client Client you created (and connect and close). The backend never closes
   * it. After its session expires the driver cannot be reused; give `clientFactory` too so the
   * backend can open a new session for later acquires.
   */
  client?: ZooKeeperClientInput;
  /**
   * Returns a new, NOT yet connected client (e.g. `() => zookeeper.createClient(hosts, {
   * sessionTimeout })`): the same shape as every backend's clientFactory (a function returning a
   * client the backend owns and closes), except that it must return the client itself, not a
   * Promise, and may be called again: a ZooKeeper client cannot outlive its session, so after an
   * expiry the backend asks for a new one. The backend connects it, uses it after `client`'s
   * session expired (or from the start when `client` is omitted), and closes it on close().
   */
  clientFactory?: () => ZooKeeperClientInput;
  /** Parent of every lock directory. Default '/locks' (Curator users pass the same base path). */
  basePath?: string;
  /**
   * Which Curator recipe exclusive locks speak on the wire: 'mutex' (default) = InterProcessMutex
   * (`lock-` nodes); 'read-write' = the write lock of InterProcessReadWriteLock (`__WRIT__`).
   * Shared locks are always InterProcessReadWriteLock read locks (`__READ__`).
   */
  curatorRecipe?: CuratorRecipe;
  /**
   * Whose recipes our nodes speak: 'curator' (default; InterProcessMutex /
   * InterProcessReadWriteLock locks, LeaderLatch campaigns) or 'kazoo' (kazoo Lock / ReadLock /
   * WriteLock locks, kazoo Election campaigns). No node name satisfies both libraries (each wants
   * its own name right before the sequence); see docs/backends/zookeeper.md.
   */
  nodeNames?: NodeNames;
  /**
   * The session timeout (ms) you asked the client for. When given, acquires fail with
   * InvalidLockOptionsError if the server negotiated a different one (it silently clamps).
   */
  sessionTimeout?: number;
  /**
   * ACL of every node the backend creates (lock directories and contender nodes), e.g.
   * `[{ scheme: 'digest', id: zooKeeperDigestId('app', secret), perms: 'cdrwa' }, { scheme:
   * 'world', id: 'anyone', perms: 'r' }]`. Default: open (world:anyone, all), as Curator. Java
   * services sharing the locks must authenticate as an identity the ACL admits.
   */
  acl?: readonly ZooKeeperAcl[];
  /**
   * Credentials added to every session of the backend (addAuthInfo; the driver re-sends them after
   * a reconnect), e.g. `{ scheme: 'digest', auth: 'app:secret' }`. Also added to a `client` you
   * pass.
   */
  authInfo?: ZooKeeperAuthInfo | readonly ZooKeeperAuthInfo[];
}

const KNOWN = [
  'client',
  'clientFactory',
  'basePath',
  'curatorRecipe',
  'nodeNames',
  'sessionTimeout',
  'acl',
  'authInfo',
] as const;
const CLIENT_METHODS = [
  'connect',
  'close',
  'create',
  'remove',
  'exists',
  'getData',
  'getChildren',
  'mkdirp',
  'getState',
  'getSessionId',
  'getSessionTimeout',
  'on',
  'removeListener',
] as const;
const CLIENT = 'a node-zookeeper-client Client (zookeeper.createClient(...))';

export interface CheckedZooKeeperOptions {
  readonly client?: ZooKeeperClientLike;
  readonly clientFactory?: () => ZooKeeperClientLike;
  readonly basePath: string;
  readonly curatorRecipe: CuratorRecipe;
  readonly nodeNames: NodeNames;
  readonly sessionTimeout?: number;
  readonly acl?: readonly ZooKeeperAcl[];
  readonly authInfo: readonly ZooKeeperAuthInfo[];
}

/** Checks a client (yours, or one clientFactory returned): every method the backend calls. */
export function checkZooKeeperClient(client: unknown, option = 'client'): ZooKeeperClientLike {
  return checkClient<ZooKeeperClientLike>(option, client, CLIENT_METHODS, CLIENT);
}

/**
 * Validates the backend's options with the kit's checker; every error names the option, the value
 * and what is allowed.
 */
export function checkOptions(options: unknown): CheckedZooKeeperOptions {
  const o = checkOptionsObject<ZooKeeperLockBackendOptions>(
    'options',
    options,
    KNOWN,
    'an object like { client } or { clientFactory }',
  );
  const { client, clientFactory } = o;
  if (client === undefined && clientFactory === undefined) {
    throw new InvalidLockOptionsError('client', client, `${CLIENT}, or give clientFactory`);
  }
  if (client !== undefined) checkZooKeeperClient(client);
  if (clientFactory !== undefined && typeof clientFactory !== 'function') {
    throw new InvalidLockOptionsError(
      'clientFactory',
      clientFactory,
      'a function returning a new, not yet connected node-zookeeper-client Client',
    );
  }
  const curatorRecipe = checkOneOf<CuratorRecipe>('curatorRecipe', o.curatorRecipe ?? 'mutex', [
    'mutex',
    'read-write',
  ]);
  const nodeNames = checkOneOf<NodeNames>('nodeNames', o.nodeNames ?? 'curator', [
    'curator',
    'kazoo',
  ]);
  const sessionTimeout =
    o.sessionTimeout === undefined
      ? undefined
      : checkDuration('sessionTimeout', o.sessionTimeout, 1);
  const acl = checkAcl(o.acl);
  const authInfo = checkAuthInfo(o.authInfo);
  if (
    authInfo.length > 0 &&
    client !== undefined &&
    typeof (client as ZooKeeperClientLike).addAuthInfo !== 'function'
  ) {
    throw new InvalidLockOptionsError(
      'client',
      client,
      'a node-zookeeper-client Client with addAuthInfo (needed by authInfo)',
    );
  }
  return {
    client: client as ZooKeeperClientLike | undefined,
    clientFactory: clientFactory as (() => ZooKeeperClientLike) | undefined,
    basePath: checkBasePath(o.basePath ?? '/locks'),
    curatorRecipe,
    nodeNames,
    sessionTimeout,
    acl,
    authInfo,
  };
}
