export { ZooKeeperLockBackend } from './zookeeper.backend';
export type { ZooKeeperLockBackendOptions } from './zookeeper.options';
export type { ZooKeeperClientLike } from './zookeeper.client';
export type { ZooKeeperClientInput } from './zookeeper.options';
export type { ZooKeeperLockStats } from './zookeeper.own-node';
export type { SessionState as ZooKeeperSessionState } from './zookeeper.session';
export { encodeLockName, lockDirectory, type CuratorRecipe } from './zookeeper.nodes';
export { zooKeeperDigestId, type ZooKeeperAcl, type ZooKeeperAuthInfo } from './zookeeper.acl';
