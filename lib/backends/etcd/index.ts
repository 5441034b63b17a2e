export { EtcdLockBackend } from './etcd.backend';
export {
  DEFAULT_ETCD_CALL_TIMEOUT_MS,
  DEFAULT_ETCD_SESSION_TTL_MS,
  type EtcdLockBackendOptions,
} from './etcd.options';
export type { EtcdClientLike } from './etcd.client';
export { encodeEtcdLockName, etcdLockPrefix, SHARED_VALUE as ETCD_SHARED_VALUE } from './etcd.keys';
