import type { FencedResult } from './fencing-token';

/**
 * The fence alone, without a write: "record `token` for `resource` if it is not older than the
 * highest recorded, and say which". The `@Fenced` guard uses it for calls between services; every
 * store of this package implements it (Redis, PostgreSQL, MySQL, memory), and so can yours.
 */
export interface FenceStore {
  /** Accepted when `token` >= the highest token recorded for `resource` (which becomes `token`). */
  advance(resource: string, token: bigint): Promise<FencedResult<void>>;
}
