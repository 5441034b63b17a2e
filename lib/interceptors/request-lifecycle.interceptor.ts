import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { RequestAbortedError } from '../errors/request-aborted.error';
import { runWithRequestSignal } from './request-signal';

interface RawResponse {
  writableFinished?: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Global (registered by DistributedLockModule): gives every HTTP request an AbortSignal that aborts
 * when the client goes away before the response is finished (the raw response's 'close' without
 * `writableFinished`; Express and Fastify alike). Locks acquired while handling the request wait
 * under that signal, so a waiter whose client left stops at once, leaves the queue, and its handler
 * never runs. Streaming responses need nothing here: Nest unsubscribes the Observable on close, and
 * a @Locked Observable releases on unsubscribe.
 */
@Injectable()
export class RequestLifecycleInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const response = rawResponse(context.switchToHttp().getResponse());
    if (!response) return next.handle();
    const controller = new AbortController();
    const onClose = () => {
      if (!response.writableFinished) controller.abort(new RequestAbortedError());
    };
    response.once('close', onClose);
    // next.handle() binds the handler to the current async context: the signal travels with it.
    return runWithRequestSignal(controller.signal, () => next.handle());
  }
}

function rawResponse(res: unknown): RawResponse | undefined {
  const raw = (res as { raw?: unknown } | undefined)?.raw ?? res; // Fastify's reply wraps the raw one
  return raw && typeof (raw as RawResponse).once === 'function' ? (raw as RawResponse) : undefined;
}
