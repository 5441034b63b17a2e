export { EtcdLockBackend, DEFAULT_ETCD_CALL_TIMEOUT_MS, DEFAULT_ETCD_SESSION_TTL_MS } from './etcd.backend';
export type { EtcdLockBackendOptions } from './etcd.backend';
export type { EtcdClientLike } from './etcd.client';
export { encodeEtcdLockName, etcdLockPrefix, SHARED_VALUE as ETCD_SHARED_VALUE } from './etcd.keys';
