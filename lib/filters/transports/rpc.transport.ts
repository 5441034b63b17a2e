import { throwError } from 'rxjs';
import { isEmitter } from '../../interceptors/request-signal';
import { INTERNAL, lockErrorPayload } from '../lock-error.answers';
import { optionalPeer, type RpcModule, type TransportException } from '../optional-peers';
import type { LockTransportModule } from './lock-transport';

/**
 * Microservices: an RpcException payload { code, message, retryAfter }; bugs get { status, message
 * }.
 */
export const rpcTransport: LockTransportModule = {
  name: 'rpc',
  exception(_error, r) {
    const rpc = optionalPeer<RpcModule>('@nestjs/microservices');
    return rpc ? new rpc.RpcException(lockErrorPayload(r)) : undefined;
  },
  answer: (mapped) => {
    const payload = mapped ? payloadOf(mapped.exception) : INTERNAL;
    return throwError(() => payload);
  },
  requestSignal(host) {
    // TCP: the client's socket closing ends the wait.
    const ctx = host.switchToRpc().getContext<{ getSocketRef?: () => { netSocket?: unknown } }>();
    const socket =
      typeof ctx?.getSocketRef === 'function'
        ? (ctx.getSocketRef().netSocket as Record<string, unknown> | undefined)
        : undefined;
    return isEmitter(socket)
      ? { emitter: socket, event: 'close', gone: () => socket.destroyed === true }
      : undefined;
  },
};

/**
 * RpcException and WsException carry their payload in getError(); a user mapper may return a plain
 * value.
 */
export function payloadOf(exception: unknown): unknown {
  const error = (exception as TransportException | null)?.getError;
  return typeof error === 'function' ? (exception as TransportException).getError() : exception;
}
