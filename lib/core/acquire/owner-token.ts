import { randomFillSync } from 'node:crypto';

/** Bytes drawn from the CSPRNG at once: 256 owner tokens per refill. */
const POOL_SIZE = 4096;
const TOKEN_CHARS = 32;
const pool = Buffer.allocUnsafe(POOL_SIZE);
/** The pool as hex, encoded once per refill; tokens are slices of it. */
let hex = '';
let offset = 2 * POOL_SIZE;

/**
 * A new owner token: 128 random bits from the CSPRNG, as 32 hex characters. Drawn from a pool
 * filled 4 KiB at a time and hex-encoded at once: `randomBytes(16)` per acquire was the largest
 * single cost of the uncontended cycle (a native call and a Buffer per token), and a
 * `toString('hex')` per token was still the next one. Each byte of the pool is handed out once,
 * so tokens are exactly as unpredictable as before and never share bytes.
 */
export function newOwnerToken(): string {
  if (offset + TOKEN_CHARS > hex.length) {
    randomFillSync(pool);
    hex = pool.toString('hex');
    offset = 0;
  }
  const token = hex.slice(offset, offset + TOKEN_CHARS);
  offset += TOKEN_CHARS;
  return token;
}
