import {
  applyDecorators,
  Controller,
  Get,
  Header,
  Inject,
  Module,
  Query,
  Sse,
  UseGuards,
  type CanActivate,
  type DynamicModule,
  type Type,
} from '@nestjs/common';
import { map, takeUntil, timer, type Observable } from 'rxjs';
import type { FencingEvents } from '../fencing/fencing-events';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LiveViewTickets, streamGuard } from './live-view.access';
import { LIVE_VIEW_CSP, liveViewPage } from './live-view.page';
import { LIVE_VIEW_FENCING_EVENTS, LiveViewState, type LiveViewSnapshot } from './live-view.state';

export interface DistributedLockLiveViewOptions {
  /**
   * Route of the page; the SSE stream is `<path>/events`, a JSON snapshot `<path>/state`. Default
   * 'locks/live'.
   */
  path?: string;
  /** Required: a guard class deciding who may see the page (it shows keys and owner details). */
  guard: Type<CanActivate>;
  /**
   * Where the fenced stores of this app report refused writes, listed with the lock events (give
   * your stores the same `events`). Default: none listed; the process-wide `fencingEvents` mixes
   * the refusals of every app of the process, so pass it only where the process runs one app.
   */
  fencingEvents?: FencingEvents;
}

/**
 * An opt-in page of this process's held locks, waiters and recent lock events, updated live over
 * server-sent events. Off unless imported; every route sits behind the guard you supply (there is
 * no default guard: the page shows lock keys; cookie, header and query guards all work, see
 * live-view.access.ts). Import it next to DistributedLockModule:
 * `DistributedLockLiveViewModule.register({ path: 'locks/live', guard: AdminGuard })`.
 */
@Module({})
export class DistributedLockLiveViewModule {
  static register(options: DistributedLockLiveViewOptions): DynamicModule {
    if (options === null || typeof options !== 'object')
      throw new InvalidLockOptionsError('live view options', options, 'an object { path, guard }');
    for (const name of Object.keys(options)) {
      if (name !== 'path' && name !== 'guard' && name !== 'fencingEvents')
        throw new InvalidLockOptionsError(
          name,
          (options as unknown as Record<string, unknown>)[name],
          'one of path, guard, fencingEvents (unknown option)',
        );
    }
    if (typeof options.guard !== 'function')
      throw new InvalidLockOptionsError(
        'guard',
        options.guard,
        'a guard class (CanActivate): the live view is never served unguarded',
      );
    const path = options.path ?? 'locks/live';
    if (typeof path !== 'string' || !/^[A-Za-z0-9/_-]+$/.test(path))
      throw new InvalidLockOptionsError(
        'path',
        path,
        'a route path of letters, digits, /, _ and -',
      );
    const events = options.fencingEvents;
    if (events !== undefined && (events === null || typeof events.on !== 'function'))
      throw new InvalidLockOptionsError('fencingEvents', events, 'a FencingEvents instance');
    return {
      module: DistributedLockLiveViewModule,
      controllers: [liveViewController(path, options.guard)],
      providers: [
        LiveViewState,
        LiveViewTickets,
        options.guard,
        { provide: LIVE_VIEW_FENCING_EVENTS, useValue: events ?? null },
      ],
    };
  }
}

/**
 * Headers of every live view answer: no caching, no sniffing, no framing, no referrer (the ticket).
 */
const SAFETY_HEADERS: [string, string][] = [
  ['cache-control', 'no-store'],
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['referrer-policy', 'no-referrer'],
];

function liveViewController(path: string, guard: Type<CanActivate>): Type<unknown> {
  const Stream = streamGuard(guard);
  const safe = applyDecorators(...SAFETY_HEADERS.map(([k, v]) => Header(k, v)));

  /**
   * The page sits behind your guard; its stream and snapshot accept the page's ticket instead
   * (an EventSource sends no headers), else your guard decides. See live-view.access.ts.
   */
  @Controller(path)
  class DistributedLockLiveViewController {
    constructor(
      @Inject(LiveViewState) private readonly state: LiveViewState,
      @Inject(LiveViewTickets) private readonly tickets: LiveViewTickets,
    ) {}

    @Get()
    @UseGuards(guard)
    @safe
    @Header('content-type', 'text/html; charset=utf-8')
    @Header('content-security-policy', LIVE_VIEW_CSP)
    page(): string {
      return liveViewPage(this.tickets.issue());
    }

    @Get('state')
    @UseGuards(Stream)
    @safe
    snapshot(@Query('filter') filter?: unknown): LiveViewSnapshot {
      return this.state.snapshot(filterOf(filter));
    }

    @Sse('events')
    @UseGuards(Stream)
    @safe
    events(
      @Query('ticket') ticket?: unknown,
      @Query('filter') filter?: unknown,
    ): Observable<{ data: LiveViewSnapshot }> {
      const updates = this.state.updates(filterOf(filter)).pipe(map((data) => ({ data })));
      // A stream let in by its ticket ends when the ticket does (the page then reloads itself,
      // through your guard); one your guard let in lasts while the guard's answer does.
      const expires = this.tickets.expiry(ticket);
      if (expires === undefined) return updates;
      return updates.pipe(takeUntil(timer(Math.max(0, expires - Date.now()))));
    }
  }
  return DistributedLockLiveViewController;
}

/** The page's key filter: a string of at most 200 characters, anything else none. */
function filterOf(filter: unknown): string {
  return typeof filter === 'string' ? filter.slice(0, 200) : '';
}
