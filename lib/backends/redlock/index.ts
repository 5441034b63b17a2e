export { RedlockBackend } from './redlock.backend';
export type { RedlockBackendOptions } from './redlock.options';
export type { RedlockClientLike } from './redlock.quorum';
