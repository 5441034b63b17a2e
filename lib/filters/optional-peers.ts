/**
 * Loads an optional peer (@nestjs/microservices, @nestjs/websockets, graphql) when a request of
 * that transport needs it. A request of a transport exists only if its package is installed, so
 * the package never requires one of them up front.
 */
const cache = new Map<string, unknown>();

export function optionalPeer<T>(
  name: 'graphql' | '@nestjs/microservices' | '@nestjs/websockets',
): T | undefined {
  if (!cache.has(name)) {
    let loaded: unknown;
    try {
      loaded = require(name);
    } catch {
      loaded = undefined;
    }
    cache.set(name, loaded);
  }
  return cache.get(name) as T | undefined;
}

/** What the mapping uses from each peer (structural, so no types are imported). */
export interface TransportException {
  getError(): string | object;
}
export interface RpcModule {
  RpcException: new (error: string | object) => TransportException;
}
export interface WsModule {
  WsException: new (error: string | object) => TransportException;
}
export interface GraphqlModule {
  GraphQLError: new (
    message: string,
    options?: { extensions?: Record<string, unknown>; originalError?: Error },
  ) => Error;
}
