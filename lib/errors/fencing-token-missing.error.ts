import { DistributedLockError } from './distributed-lock.error';

/**
 * A call to a `@Fenced` handler carried no fencing token, or one that cannot be read (the HTTP
 * header or RPC field names the expected format). Nothing ran.
 */
export class FencingTokenMissingError extends DistributedLockError {
  /** Where the token was looked for: the header or field name. */
  readonly carrier: string;

  constructor(carrier: string, problem: string) {
    super('FENCING_TOKEN_MISSING', `Fenced call rejected: ${problem} (${carrier})`);
    this.carrier = carrier;
  }
}
