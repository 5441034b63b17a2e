import { responseSource } from '../filters/transports/http.transport';
import { RequestContext, runInRequest } from './request-signal';

/**
 * The module's HTTP middleware (Express and Fastify alike, every route): attaches the request to
 * the async context, which costs one small object; the response's 'close' is listened to only while
 * a lock wait of the request is. It runs before guards, so a guard's wait is cancelled too.
 */
export function requestContextMiddleware(_req: unknown, res: unknown, next: () => void): void {
  runInRequest(new RequestContext(() => responseSource(res)), next);
}
