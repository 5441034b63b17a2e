import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockKeyResolutionError } from '../errors/lock-key-resolution.error';
import { LockLostError } from '../errors/lock-lost.error';
import { FencingTokenMissingError } from '../errors/fencing-token-missing.error';
import { StaleFencingTokenError } from '../errors/stale-fencing-token.error';
import {
  defaultLockException,
  lockErrorResponse,
  resolveErrorMapping,
  retryAfterSeconds,
} from './lock-error.mapper';

describe('lockErrorResponse', () => {
  const secret = 'tenant:acme/order:42';
  const driver = new Error('connect ECONNREFUSED 10.1.2.3:6379');

  it('names the code and a generic message, never the key or driver text', () => {
    const cases = [
      [new LockAcquireTimeoutError(secret, 0, 2_000), 409],
      [new LockLostError(secret, 'renewal found it gone', driver), 409],
      [
        new LockKeyResolutionError(`order:<id> of ${secret}`, 'the key function threw: TypeError'),
        400,
      ],
      [
        new LockBackendUnavailableError('default (redis)', 'acquire failed', {
          key: secret,
          cause: driver,
        }),
        503,
      ],
    ] as const;
    for (const [error, status] of cases) {
      const response = lockErrorResponse(error);
      expect(response?.status).toBe(status);
      expect(response?.code).toBe(error.code);
      const text = JSON.stringify(response);
      for (const leak of [secret, 'ECONNREFUSED', '10.1.2.3', 'redis', 'TypeError'])
        expect(text).not.toContain(leak);
    }
  });

  it('a stale fencing token is 409 STALE_FENCING_TOKEN on every transport, a missing one 400', () => {
    const stale = new StaleFencingTokenError({ resource: secret, token: 4n, highest: 9n });
    const response = lockErrorResponse(stale);
    expect(response).toMatchObject({ status: 409, code: 'STALE_FENCING_TOKEN' });
    expect(JSON.stringify(response)).not.toContain(secret);
    expect(
      lockErrorResponse(new FencingTokenMissingError('x-fencing-token', 'none')),
    ).toMatchObject({ status: 400, code: 'FENCING_TOKEN_MISSING' });
    const http = defaultLockException('http', stale, response!) as { getStatus(): number };
    expect(http.getStatus()).toBe(409);
    for (const transport of ['rpc', 'ws'])
      expect(
        (defaultLockException(transport, stale, response!) as { getError(): unknown }).getError(),
      ).toMatchObject({ code: 'STALE_FENCING_TOKEN' });
    const gql = defaultLockException('graphql', stale, response!) as { extensions: unknown };
    expect(gql.extensions).toMatchObject({ code: 'STALE_FENCING_TOKEN' });
  });

  it('busy answers carry retryAfter in ms, whole seconds as in Retry-After (the remaining ttl for a key without history)', () => {
    expect(lockErrorResponse(new LockAcquireTimeoutError('fresh-key', 0, 2_500))?.retryAfter).toBe(
      3_000,
    );
    expect(lockErrorResponse(new LockAcquireTimeoutError('fresh-key', 0, 0))?.retryAfter).toBe(
      1_000,
    );
    expect(retryAfterSeconds(2_500)).toBe(3);
    expect(retryAfterSeconds(10)).toBe(1);
  });

  it('exposeErrorDetails shows the message and key', () => {
    const r = lockErrorResponse(new LockAcquireTimeoutError(secret, 0), true);
    expect(r?.key).toBe(secret);
    expect(r?.message).toContain(secret);
  });

  it('bugs (bad options) get no client-facing answer: the transport’s generic 500', () => {
    expect(
      lockErrorResponse(new InvalidLockOptionsError('ttl', -1, 'a positive integer')),
    ).toBeUndefined();
  });
});

describe('resolveErrorMapping', () => {
  it('defaults to every transport; httpErrors still overrides http', () => {
    expect(resolveErrorMapping({}).mapping).toEqual({
      http: true,
      rpc: true,
      ws: true,
      graphql: true,
    });
    expect(resolveErrorMapping({ errorMapping: { ws: false }, httpErrors: false }).mapping).toEqual(
      { http: false, rpc: true, ws: false, graphql: true },
    );
  });
});
