import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';

/**
 * Converts a driver's integer (number, bigint, decimal string, or an 8-byte big-endian Buffer such
 * as ZooKeeper's zxids) to the bigint fencing tokens are made of. Anything else is a protocol
 * error of the backend, reported as unavailable rather than as a wrong token.
 */
export function toBigInt(value: unknown, backend = 'backend'): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
  if (Buffer.isBuffer(value) && value.length === 8) return value.readBigInt64BE(0);
  throw new LockBackendUnavailableError(
    backend,
    `expected an integer from the server, got ${String(value)}`,
  );
}
