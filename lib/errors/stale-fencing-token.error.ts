import { DistributedLockError } from './distributed-lock.error';

/**
 * A fenced write (or a fenced call) presented a fencing token older than the highest one the
 * resource has already accepted: a newer holder has taken the lock since this token was granted,
 * so the write was refused and nothing changed. Retrying with the same token cannot succeed;
 * acquire the lock again.
 */
export class StaleFencingTokenError extends DistributedLockError {
  /** The fenced resource (Redis key, SQL row or fence name, or the carried lock key). */
  readonly resource: string;
  /** The token this write presented. */
  readonly token: bigint;
  /**
   * The highest token the resource had accepted when it refused this one; equal to `token` when
   * another grant had written with the same token.
   */
  readonly highest: bigint;

  constructor(options: { resource: string; token: bigint; highest: bigint; key?: string }) {
    const { resource, token, highest } = options;
    super(
      'STALE_FENCING_TOKEN',
      token === highest
        ? `Fenced write to "${resource}" refused: fencing token ${token} was already written by ` +
            'another grant (tokens repeated across a failover, or two holders of one token)'
        : `Fenced write to "${resource}" refused: fencing token ${token} is older than ${highest}, ` +
            'the highest this resource has accepted (a newer holder took the lock)',
      { key: options.key ?? resource },
    );
    this.resource = resource;
    this.token = token;
    this.highest = highest;
  }
}
