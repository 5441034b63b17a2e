import { Logger } from '@nestjs/common';
import { lockErrorPayload } from '../lock-error.answers';
import { optionalPeer, type GraphqlModule } from '../optional-peers';
import { responseSource } from './http.transport';
import type { LockTransportModule } from './lock-transport';

const logger = new Logger('ExceptionsHandler');

/**
 * GraphQL: a GraphQLError (message, extensions { code, retryAfter }); the filter's return value is
 * what the resolver throws. A bug is logged here and answers a GraphQLError with a generic message,
 * as HTTP answers a bare 500: its text (a tenant's key in an option error) never reaches the
 * client.
 */
export const graphqlTransport: LockTransportModule = {
  name: 'graphql',
  exception(_error, r) {
    const gql = optionalPeer<GraphqlModule>('graphql');
    const { message: _message, ...extensions } = lockErrorPayload(r);
    return gql ? new gql.GraphQLError(r.message, { extensions }) : undefined;
  },
  answer(mapped, error) {
    if (mapped) return mapped.exception;
    logger.error(error);
    const gql = optionalPeer<GraphqlModule>('graphql');
    const extensions = { code: 'INTERNAL_SERVER_ERROR' };
    return gql ? new gql.GraphQLError('Internal server error', { extensions }) : error;
  },
  requestSignal(host) {
    // Apollo on Express gives { req } (Express links req.res); Mercurius gives { reply }.
    const ctx = host.getArgByIndex<
      { req?: { res?: unknown }; res?: unknown; reply?: unknown } | undefined
    >(2);
    return responseSource(ctx?.res ?? ctx?.reply ?? ctx?.req?.res);
  },
};
