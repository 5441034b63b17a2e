import {
  Controller,
  DefaultValuePipe,
  Get,
  Header,
  Param,
  ParseIntPipe,
  Post,
  Query,
  Req,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { Locked } from '../../lib';
import { homePage } from './home.page';
import { listRoutes } from './routes';

const MAX_HOLD_MS = 60_000;

/** The demo's front door: `/` lists the routes; `/demo/hold/:id` holds an order's lock to provoke a 409. */
@Controller()
export class HomeController {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  home(
    @Req() req: { protocol?: string; headers: Record<string, string | string[] | undefined> },
  ): string {
    const host = typeof req.headers.host === 'string' ? req.headers.host : '127.0.0.1:3000';
    return homePage(
      listRoutes(this.discovery, this.scanner),
      `${req.protocol ?? 'http'}://${host}`,
      process.env.LOCK_BACKEND ?? 'memory',
    );
  }

  /** Holds order:<id> (the key of /orders/:id/pay) for `ms` milliseconds, at most a minute. */
  @Post('demo/hold/:id')
  @Locked('order:<id>', { ttl: 5_000, onBusy: 'fail' })
  async hold(
    @Param('id') id: string,
    @Query('ms', new DefaultValuePipe(10_000), ParseIntPipe) ms: number,
  ): Promise<{ held: string; ms: number }> {
    const hold = Math.min(Math.max(ms, 0), MAX_HOLD_MS);
    await new Promise((resolve) => setTimeout(resolve, hold));
    return { held: `order:${id}`, ms: hold };
  }
}
