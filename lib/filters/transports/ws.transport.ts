import { isEmitter } from '../../interceptors/request-signal';
import { INTERNAL, lockErrorPayload } from '../lock-error.answers';
import { optionalPeer, type WsModule } from '../optional-peers';
import type { LockTransportModule } from './lock-transport';
import { payloadOf } from './rpc.transport';

/**
 * Gateways: a WsException payload sent as an `exception` frame (socket.io emits it to the peer; a
 * platform-ws WebSocket's emit() is local, so it gets a frame); bugs get { status, message }.
 */
export const wsTransport: LockTransportModule = {
  name: 'ws',
  exception(_error, r) {
    const ws = optionalPeer<WsModule>('@nestjs/websockets');
    return ws ? new ws.WsException(lockErrorPayload(r)) : undefined;
  },
  answer(mapped, _error, host) {
    const data = mapped ? payloadOf(mapped.exception) : INTERNAL;
    const client = host.switchToWs().getClient<Record<string, unknown>>();
    if (client && !('nsp' in client) && typeof client.send === 'function') {
      if (client.readyState === 1)
        (client.send as (s: string) => void)(JSON.stringify({ event: 'exception', data }));
    } else if (client && typeof client.emit === 'function') {
      (client.emit as (e: string, d: unknown) => void)('exception', data);
    }
    return undefined;
  },
  requestSignal(host) {
    const client = host.switchToWs().getClient<Record<string, unknown>>();
    if (!isEmitter(client)) return undefined;
    if ('nsp' in client)
      return { emitter: client, event: 'disconnect', gone: () => client.connected === false };
    return {
      emitter: client,
      event: 'close',
      gone: () => typeof client.readyState === 'number' && client.readyState > 1,
    };
  },
};
