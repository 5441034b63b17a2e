import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  Inject,
  Injectable,
  type CanActivate,
  type ExecutionContext,
  type Type,
} from '@nestjs/common';

/**
 * How long a page's stream ticket is good for (ms); the page reloads itself (through your guard)
 * after.
 */
export const STREAM_TICKET_MS = 10 * 60_000;

/**
 * Stream tickets: the page's route (behind your guard) hands the page a ticket, and the page's
 * event stream and snapshot carry it in the query, because a browser's EventSource cannot send the
 * headers a header guard checks. A ticket is an HMAC (a secret of this process) over its expiry:
 * it lets its holder read this live view, nothing else, for STREAM_TICKET_MS. Behind several
 * replicas, a stream that reaches another replica falls back to your guard (sticky sessions, or
 * a cookie or query guard, avoid that).
 */
@Injectable()
export class LiveViewTickets {
  private readonly secret = randomBytes(32);

  issue(now = Date.now()): string {
    const expires = String(now + STREAM_TICKET_MS);
    return `${expires}.${this.mac(expires)}`;
  }

  valid(ticket: unknown, now = Date.now()): boolean {
    return this.expiry(ticket, now) !== undefined;
  }

  /** When a valid ticket expires (epoch ms); undefined for an invalid or expired one. */
  expiry(ticket: unknown, now = Date.now()): number | undefined {
    if (typeof ticket !== 'string' || ticket.length > 128) return undefined;
    const [expires, mac] = ticket.split('.');
    if (!/^\d{1,16}$/.test(expires ?? '') || Number(expires) < now || !mac) return undefined;
    const want = Buffer.from(this.mac(expires));
    const got = Buffer.from(mac);
    return got.length === want.length && timingSafeEqual(got, want) ? Number(expires) : undefined;
  }

  private mac(expires: string): string {
    return createHmac('sha256', this.secret).update(`live-view:${expires}`).digest('base64url');
  }
}

/** The stream's and snapshot's guard: a valid ticket in `?ticket=`, else your guard decides. */
export function streamGuard(guard: Type<CanActivate>): Type<CanActivate> {
  @Injectable()
  class LiveViewStreamGuard implements CanActivate {
    constructor(
      @Inject(guard) private readonly inner: CanActivate,
      @Inject(LiveViewTickets) private readonly tickets: LiveViewTickets,
    ) {}

    canActivate(context: ExecutionContext) {
      const req = context
        .switchToHttp()
        .getRequest<{ query?: Record<string, unknown>; url?: string }>();
      const ticket =
        req.query?.ticket ?? new URL(req.url ?? '/', 'http://x').searchParams.get('ticket');
      if (this.tickets.valid(ticket)) return true;
      return this.inner.canActivate(context);
    }
  }
  return LiveViewStreamGuard;
}

/** sha256 CSP source of an inline script or style. */
export function cspHash(source: string): string {
  return `'sha256-${createHash('sha256').update(source).digest('base64')}'`;
}
