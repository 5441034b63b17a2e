import type { FencedResult, FencingTokenLike } from './fencing-token';

/**
 * The fence alone, without a write: "record `token` for `resource` if it is current, and say
 * which". The `@Fenced` guard uses it for calls between services; every store of this package
 * implements it (Redis, PostgreSQL, MySQL, memory), and so can yours.
 */
export interface FenceStore {
  /**
   * Accepted when `token` is higher than the highest token recorded for `resource`, or equal to it
   * and from the grant that recorded it; the token (and its grant) is then recorded.
   */
  advance(resource: string, token: FencingTokenLike): Promise<FencedResult<void>>;
  /** Forgets `resource`'s fence: an operator's reset. True when there was one. */
  reset?(resource: string): Promise<boolean>;
}
