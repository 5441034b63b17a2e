import {
  Inject,
  Injectable,
  Optional,
  type ArgumentsHost,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, throwError, type Observable } from 'rxjs';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { DistributedLockError } from '../errors/distributed-lock.error';
import {
  defaultLockException,
  lockErrorResponse,
  mapLockError,
  resolveErrorMapping,
  retryAfterSeconds,
} from '../filters/lock-error.mapper';
import type { DistributedLockModuleOptions } from '../interfaces/distributed-lock-module-options.interface';

/**
 * Optional: turns lock errors of the handlers it is bound to into the transport's exception right
 * at the handler (HttpException with Retry-After, RpcException, WsException, GraphQLError), so your
 * own filters for those exception types see them. Without it the module's global
 * LockExceptionFilter answers lock errors with the same mapping; bind this only if you need the
 * conversion earlier. Uses the module's `errorMapping` / `exposeErrorDetails`.
 */
@Injectable()
export class LockedInterceptor implements NestInterceptor {
  private readonly settings: ReturnType<typeof resolveErrorMapping>;

  constructor(
    @Optional() @Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) options?: DistributedLockModuleOptions,
  ) {
    this.settings = resolveErrorMapping(options ?? {});
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (!(error instanceof DistributedLockError)) return throwError(() => error);
        const mapped = mapLockError(error, context, this.settings);
        if (
          mapped &&
          !mapped.custom &&
          mapped.response.retryAfter !== undefined &&
          context.getType() === 'http'
        ) {
          setRetryAfter(context, retryAfterSeconds(mapped.response.retryAfter));
        }
        return throwError(() => mapped?.exception ?? error);
      }),
    );
  }
}

/**
 * The default HTTP exception for a lock error (safe body, Retry-After set on the response), for
 * your own filters; errors that are bugs come back unchanged.
 */
export function toHttpException(error: DistributedLockError, host: ArgumentsHost): unknown {
  const response = lockErrorResponse(error);
  if (!response) return error;
  if (response.retryAfter !== undefined)
    setRetryAfter(host, retryAfterSeconds(response.retryAfter));
  return defaultLockException('http', error, response);
}

type HeaderTarget = {
  setHeader?: (k: string, v: string) => void;
  header?: (k: string, v: string) => void;
};

function setRetryAfter(host: ArgumentsHost, seconds: number): void {
  const res = host.switchToHttp().getResponse<HeaderTarget>();
  if (typeof res?.header === 'function')
    res.header('Retry-After', String(seconds)); // Fastify reply, Express res
  else res?.setHeader?.('Retry-After', String(seconds));
}
