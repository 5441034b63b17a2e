import { InvalidLockOptionsError, describe } from '../../errors/invalid-lock-options.error';
import type { ZooKeeperClientLike } from './zookeeper.client';
import { checkBasePath, type CuratorRecipe } from './zookeeper.nodes';

export interface ZooKeeperLockBackendOptions {
  /**
   * A node-zookeeper-client Client you created (and connect and close). The backend never closes it.
   * After its session expires the driver cannot be reused; give `clientFactory` too so the backend
   * can open a new session for later acquires.
   */
  client?: ZooKeeperClientLike;
  /**
   * Returns a new, NOT yet connected client (e.g. `() => zookeeper.createClient(hosts, { sessionTimeout })`).
   * The backend connects it, uses it after `client`'s session expired (or from the start when
   * `client` is omitted), and closes it on close().
   */
  clientFactory?: () => ZooKeeperClientLike;
  /** Parent of every lock directory. Default '/locks' (Curator users pass the same base path). */
  basePath?: string;
  /**
   * Which Curator recipe exclusive locks speak on the wire: 'mutex' (default) = InterProcessMutex
   * (`lock-` nodes); 'read-write' = the write lock of InterProcessReadWriteLock (`__WRIT__`).
   * Shared locks are always InterProcessReadWriteLock read locks (`__READ__`).
   */
  curatorRecipe?: CuratorRecipe;
  /**
   * The session timeout (ms) you asked the client for. When given, acquires fail with
   * InvalidLockOptionsError if the server negotiated a different one (it silently clamps).
   */
  sessionTimeout?: number;
}

const KNOWN = ['client', 'clientFactory', 'basePath', 'curatorRecipe', 'sessionTimeout'];
const CLIENT_METHODS = ['connect', 'close', 'create', 'remove', 'exists', 'getData', 'getChildren', 'mkdirp', 'getState', 'getSessionId', 'getSessionTimeout', 'on', 'removeListener'] as const;

/** Validates the backend's options in one place; every error names the option, the value and what is allowed. */
export function checkOptions(options: ZooKeeperLockBackendOptions) {
  if (options === null || typeof options !== 'object') throw new InvalidLockOptionsError('options', options, 'an object like { client } or { clientFactory }');
  for (const name of Object.keys(options)) {
    if (!KNOWN.includes(name)) throw new InvalidLockOptionsError(name, (options as Record<string, unknown>)[name], `one of ${KNOWN.join(', ')} (unknown option)`);
  }
  const { client, clientFactory } = options;
  if (client === undefined && clientFactory === undefined) {
    throw new InvalidLockOptionsError('client', client, 'a node-zookeeper-client Client (zookeeper.createClient(...)), or give clientFactory');
  }
  if (client !== undefined) {
    const missing = CLIENT_METHODS.filter((m) => typeof (client as unknown as Record<string, unknown>)?.[m] !== 'function');
    if (client === null || typeof client !== 'object' || missing.length > 0) {
      throw new InvalidLockOptionsError('client', client, `a node-zookeeper-client Client (missing: ${missing.join(', ') || 'an object'})`);
    }
  }
  if (clientFactory !== undefined && typeof clientFactory !== 'function') {
    throw new InvalidLockOptionsError('clientFactory', clientFactory, 'a function returning a new, not yet connected node-zookeeper-client Client');
  }
  const curatorRecipe = options.curatorRecipe ?? 'mutex';
  if (curatorRecipe !== 'mutex' && curatorRecipe !== 'read-write') {
    throw new InvalidLockOptionsError('curatorRecipe', curatorRecipe, "'mutex' (InterProcessMutex, default) or 'read-write' (InterProcessReadWriteLock)");
  }
  const t = options.sessionTimeout;
  if (t !== undefined && (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > 2_147_483_647)) {
    throw new InvalidLockOptionsError('sessionTimeout', t, `an integer number of ms the server will negotiate unchanged (got ${describe(t)})`);
  }
  return { client, clientFactory, basePath: checkBasePath(options.basePath ?? '/locks'), curatorRecipe, sessionTimeout: t };
}
