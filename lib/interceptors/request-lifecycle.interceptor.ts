import {
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { transportOf } from '../filters/transports/lock-transports';
import { RequestContext, runInRequest } from './request-signal';

/**
 * Gives the handlers it is bound to a "client left" signal, from their transport's entry in the
 * transport table: WebSocket (the client's 'close' / 'disconnect'), TCP microservices (the socket's
 * 'close'), HTTP and GraphQL (the raw response's 'close' before it finished). The module binds it
 * to gateway classes and message handlers only; HTTP requests get the same from the module's
 * middleware, without Nest's interceptor pipeline. Locks acquired while handling the request wait
 * under that signal, so a waiter whose client left stops at once, leaves the queue, and its handler
 * never runs. Nothing listens to the client until a lock wait does.
 */
@Injectable()
export class RequestLifecycleInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const transport = transportOf(context.getType<string>());
    if (!transport?.requestSignal) return next.handle();
    const request = new RequestContext(() => transport.requestSignal?.(context));
    // next.handle() binds the handler to the current async context: the request travels with it.
    return runInRequest(request, () => next.handle());
  }
}
