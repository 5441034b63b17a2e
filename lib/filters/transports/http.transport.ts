import { HttpException } from '@nestjs/common';
import { isEmitter, type GoneSource } from '../../interceptors/request-signal';
import { ANSWERS, lockErrorPayload, retryAfterSeconds } from '../lock-error.answers';
import type { LockTransportModule } from './lock-transport';

/**
 * HTTP (Express and Fastify): HttpException 409 + Retry-After / 400 / 503; bugs get Nest's bare
 * 500.
 */
export const httpTransport: LockTransportModule = {
  name: 'http',
  exception: (error, r) =>
    new HttpException(
      { statusCode: r.status, error: ANSWERS[r.code]?.error, ...lockErrorPayload(r) },
      r.status,
      { cause: error },
    ),
  answer(mapped, error, host, tools) {
    if (mapped && !mapped.custom && mapped.response.retryAfter !== undefined)
      tools.setHeader(host, 'Retry-After', String(retryAfterSeconds(mapped.response.retryAfter)));
    // A lock error nobody mapped is a bug: BaseExceptionFilter logs it and answers a bare 500.
    return tools.base(mapped?.exception ?? error, host);
  },
  requestSignal: (host) => responseSource(host.switchToHttp().getResponse()),
};

/**
 * The raw response's 'close' before it finished: the client left (Express res, Fastify reply.raw).
 */
export function responseSource(res: unknown): GoneSource | undefined {
  type Raw = GoneSource['emitter'] & {
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
