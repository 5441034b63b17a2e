import {
  BadRequestException,
  ConflictException,
  Inject,
  Injectable,
  Optional,
  ServiceUnavailableException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, throwError, type Observable } from 'rxjs';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { DistributedLockError } from '../errors/distributed-lock.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import type { DistributedLockModuleOptions } from '../interfaces/distributed-lock-module-options.interface';

/**
 * Applied by @Locked to request handlers. The lock itself is taken by the method wrapper (which
 * sees the handler's real arguments); this interceptor turns lock errors into HTTP answers:
 * busy/timeout -> 409 + Retry-After, lost -> 409, key resolution -> 400, backend down -> 503.
 * Configure or replace with the module option `httpErrors`. Other transports get errors unchanged.
 */
@Injectable()
export class LockedInterceptor implements NestInterceptor {
  constructor(@Optional() @Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) private readonly options?: DistributedLockModuleOptions) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const mapping = this.options?.httpErrors ?? true;
    if (context.getType() !== 'http' || mapping === false) return next.handle();
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (!(error instanceof DistributedLockError)) return throwError(() => error);
        const custom = typeof mapping === 'function' ? mapping(error, context) : undefined;
        return throwError(() => custom ?? toHttpException(error, context));
      }),
    );
  }
}

export function toHttpException(error: DistributedLockError, context: ExecutionContext): unknown {
  const body = (status: number, name: string) => ({ statusCode: status, error: name, message: error.message, code: error.code });
  switch (error.code) {
    case 'LOCK_ACQUIRE_TIMEOUT': {
      const retryAfterMs = (error as LockAcquireTimeoutError).retryAfter;
      const seconds = Math.max(1, Math.ceil((retryAfterMs ?? 1000) / 1000));
      const res = context.switchToHttp().getResponse<{ setHeader?: (k: string, v: string) => void; header?: (k: string, v: string) => void }>();
      if (typeof res?.setHeader === 'function') res.setHeader('Retry-After', String(seconds));
      else res?.header?.('Retry-After', String(seconds));
      return new ConflictException(body(409, 'Conflict'), { cause: error });
    }
    case 'LOCK_LOST':
      return new ConflictException(body(409, 'Conflict'), { cause: error });
    case 'LOCK_KEY_RESOLUTION':
      return new BadRequestException(body(400, 'Bad Request'), { cause: error });
    case 'LOCK_BACKEND_UNAVAILABLE':
      return new ServiceUnavailableException(body(503, 'Service Unavailable'), { cause: error });
    default:
      return error;
  }
}
