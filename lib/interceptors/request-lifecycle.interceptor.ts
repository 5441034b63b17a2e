import {
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { finalize, type Observable } from 'rxjs';
import { RequestAbortedError } from '../errors/request-aborted.error';
import { runWithRequestSignal } from './request-signal';

interface Emitter {
  once(event: string, listener: () => void): unknown;
  off?(event: string, listener: () => void): unknown;
  removeListener?(event: string, listener: () => void): unknown;
}

/** Where a request learns that its client is gone: an emitter, the event, and whether it already is. */
interface GoneSource {
  emitter: Emitter;
  event: string;
  /** The client is gone already (checked once, before listening). */
  gone(): boolean;
  /** On the event: whether it means the client left (an HTTP response also closes when done). */
  early?(): boolean;
}

/**
 * Global (registered by DistributedLockModule): gives every request an AbortSignal that aborts
 * when its client goes away before the answer: HTTP and GraphQL (the raw response's 'close' before
 * it finished; Express and Fastify alike), WebSocket (the client's 'close' / 'disconnect') and TCP
 * microservices (the socket's 'close'). Locks acquired while handling the request wait under that
 * signal, so a waiter whose client left stops at once, leaves the queue, and its handler never
 * runs. The listener goes when the handler's answer ends. Streaming responses need nothing more:
 * Nest unsubscribes the Observable on close, and a @Locked Observable releases on unsubscribe.
 */
@Injectable()
export class RequestLifecycleInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const source = goneSource(context);
    if (!source) return next.handle();
    const controller = new AbortController();
    const onGone = () => {
      if (source.early?.() ?? true) controller.abort(new RequestAbortedError());
    };
    if (source.gone()) controller.abort(new RequestAbortedError());
    else source.emitter.once(source.event, onGone);
    const remove = () =>
      (source.emitter.off ?? source.emitter.removeListener)?.call(
        source.emitter,
        source.event,
        onGone,
      );
    // next.handle() binds the handler to the current async context: the signal travels with it.
    return runWithRequestSignal(controller.signal, () => next.handle()).pipe(finalize(remove));
  }
}

function goneSource(context: ExecutionContext): GoneSource | undefined {
  switch (context.getType<string>()) {
    case 'http':
      return responseSource(context.switchToHttp().getResponse());
    case 'graphql': {
      // Apollo on Express gives { req } (Express links req.res); Mercurius gives { reply }.
      const ctx = context.getArgByIndex<
        { req?: { res?: unknown }; res?: unknown; reply?: unknown } | undefined
      >(2);
      return responseSource(ctx?.res ?? ctx?.reply ?? ctx?.req?.res);
    }
    case 'ws': {
      const client = context.switchToWs().getClient<Record<string, unknown> & Emitter>();
      if (!isEmitter(client)) return undefined;
      if ('nsp' in client)
        return { emitter: client, event: 'disconnect', gone: () => client.connected === false };
      return {
        emitter: client,
        event: 'close',
        gone: () => typeof client.readyState === 'number' && client.readyState > 1,
      };
    }
    case 'rpc': {
      const ctx = context
        .switchToRpc()
        .getContext<{ getSocketRef?: () => { netSocket?: unknown } } | undefined>();
      const socket =
        typeof ctx?.getSocketRef === 'function'
          ? (ctx.getSocketRef().netSocket as Record<string, unknown> & Emitter)
          : undefined;
      return isEmitter(socket)
        ? { emitter: socket, event: 'close', gone: () => socket.destroyed === true }
        : undefined;
    }
    default:
      return undefined;
  }
}

function responseSource(res: unknown): GoneSource | undefined {
  type Raw = Emitter & {
    writableFinished?: boolean;
    destroyed?: boolean;
    socket?: { destroyed?: boolean } | null;
  };
  const raw = ((res as { raw?: unknown } | undefined)?.raw ?? res) as Raw | undefined;
  if (!isEmitter(raw)) return undefined;
  return {
    emitter: raw,
    event: 'close',
    gone: () =>
      raw.writableFinished !== true && (raw.destroyed === true || raw.socket?.destroyed === true),
    early: () => raw.writableFinished !== true,
  };
}

function isEmitter(value: unknown): value is Emitter {
  return !!value && typeof (value as Emitter).once === 'function';
}
