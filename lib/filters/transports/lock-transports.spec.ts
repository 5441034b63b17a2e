import type { ArgumentsHost } from '@nestjs/common';
import { GraphQLError } from 'graphql';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../../errors/lock-acquire-timeout.error';
import { mapLockError, resolveErrorMapping } from '../lock-error.mapper';
import { LOCK_TRANSPORTS, TRANSPORT_NAMES } from './lock-transports';
import type { FilterTools } from './lock-transport';

const secret = 'tenant:acme/order:42';
const host = (type: string) => ({ getType: () => type }) as unknown as ArgumentsHost;
const tools: FilterTools = { base: (e) => e, setHeader: () => undefined };

describe('the transport table', () => {
  it('has one entry per LockTransport, each with an answer and a request signal', () => {
    expect(TRANSPORT_NAMES).toEqual(['http', 'rpc', 'ws', 'graphql']);
    for (const name of TRANSPORT_NAMES) {
      expect(LOCK_TRANSPORTS[name].name).toBe(name);
      expect(typeof LOCK_TRANSPORTS[name].answer).toBe('function');
      expect(typeof LOCK_TRANSPORTS[name].requestSignal).toBe('function');
    }
  });

  it('graphql: a bug (an option error with a tenant key in it) answers generically, as HTTP does', () => {
    const bug = new InvalidLockOptionsError(
      'key',
      secret,
      'a key of at most 10 characters',
      secret,
    );
    const settings = resolveErrorMapping({});
    expect(mapLockError(bug, host('graphql'), settings)).toBeUndefined();
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const answer = LOCK_TRANSPORTS.graphql.answer(undefined, bug, host('graphql'), tools);
    expect(answer).toBeInstanceOf(GraphQLError);
    expect((answer as GraphQLError).message).toBe('Internal server error');
    expect(JSON.stringify(answer)).not.toContain('acme');
    expect((answer as GraphQLError).originalError).toBeUndefined();
  });

  it('graphql: a client-facing error keeps its mapped GraphQLError', () => {
    const busy = new LockAcquireTimeoutError(secret, 0, 1_000);
    const mapped = mapLockError(busy, host('graphql'), resolveErrorMapping({}));
    const answer = LOCK_TRANSPORTS.graphql.answer(mapped, busy, host('graphql'), tools);
    expect((answer as GraphQLError).extensions).toMatchObject({ code: 'LOCK_ACQUIRE_TIMEOUT' });
  });

  it('InvalidLockOptionsError carries what is allowed and the value as fields', () => {
    const error = new InvalidLockOptionsError('ttl', -1, 'a positive integer');
    expect(error.allowed).toBe('a positive integer');
    expect(error.got).toBe('-1');
  });
});
