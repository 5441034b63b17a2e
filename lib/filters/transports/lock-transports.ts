import type { LockTransport } from '../../interfaces/distributed-lock-module-options.interface';
import { graphqlTransport } from './graphql.transport';
import { httpTransport } from './http.transport';
import type { LockTransportModule } from './lock-transport';
import { rpcTransport } from './rpc.transport';
import { wsTransport } from './ws.transport';

/**
 * Every transport the module answers on, by ArgumentsHost.getType(). Adding one is one file and a
 * row.
 */
export const LOCK_TRANSPORTS: Readonly<Record<LockTransport, LockTransportModule>> = {
  http: httpTransport,
  rpc: rpcTransport,
  ws: wsTransport,
  graphql: graphqlTransport,
};

export const TRANSPORT_NAMES = Object.keys(LOCK_TRANSPORTS) as readonly LockTransport[];

/** The transport of a host's type, or undefined for a type the module does not know. */
export function transportOf(type: string): LockTransportModule | undefined {
  return Object.prototype.hasOwnProperty.call(LOCK_TRANSPORTS, type)
    ? LOCK_TRANSPORTS[type as LockTransport]
    : undefined;
}
