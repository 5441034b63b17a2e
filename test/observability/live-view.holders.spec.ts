import 'reflect-metadata';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Injectable,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { chromium, type BrowserContext } from 'playwright-core';
import { DistributedLockModule, LockService, RedisLockBackend } from '../../lib';
import { DistributedLockLiveViewModule } from '../../lib/operations';
import { RedisServer } from '../support/redis-server';
import { transpiledEnv, transpiledScript } from '../support/transpiled';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HOST = hostname().slice(0, 64);
const TOKEN = 'ops-secret';

@Injectable()
class QueryGuard implements CanActivate {
  canActivate(c: ExecutionContext): boolean {
    return c.switchToHttp().getRequest<{ query?: { token?: string } }>().query?.token === TOKEN;
  }
}

/**
 * Who holds a lock, whichever process it is: the live view of an app on Redis lists the locks held
 * on the backend with each holder's host, pid and instance name, read from what the grant stored
 * (the app's own and another process's), remaining ttl and fencing token on hover. Beside it: the
 * one time window, the legend, and a lock lost by its holder in red. LIVE_VIEW_SCREENSHOT=path
 * saves the picture the docs show (docs/images/live-view.png).
 */
describe('live view: holders of every process, in a real browser', () => {
  let redis: RedisServer;
  let app: INestApplication;
  let client: Redis;
  let browser: BrowserContext;
  let profile: string;
  let other: ChildProcess;

  beforeAll(async () => {
    redis = await RedisServer.start();
    client = new Redis({ host: '127.0.0.1', port: redis.port });
    const ref = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({
          backend: new RedisLockBackend({ client }),
          instance: 'orders-api',
          logging: false,
        }),
        DistributedLockLiveViewModule.register({ path: 'ops/locks', guard: QueryGuard }),
      ],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    profile = mkdtempSync(join(tmpdir(), 'live-view-holders-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1200, height: 1100 },
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  }, 60_000);

  afterAll(async () => {
    other?.disconnect();
    await browser?.close();
    await app?.close();
    client?.disconnect();
    await redis?.destroy();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("shows each held lock's holder (host, pid, instance), ttl and token on hover; a lost lock in red", async () => {
    // Another process, with its own instance name, holds two keys on the same Redis.
    other = fork(
      transpiledScript(join(__dirname, 'holder.process.ts')),
      [String(redis.port), 'billing-worker', 'invoice:2024-117', 'ledger:close-month'],
      {
        execArgv: [],
        env: transpiledEnv(),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    await expect(new Promise((resolve) => other.once('message', resolve))).resolves.toBe('held');
    const locks = app.get(LockService);
    for (const k of ['reports:nightly', 'inventory:sku-1'])
      await locks.withLock(k, () => new Promise((r) => setTimeout(r, 150)));
    // A wait in this process: the second caller is granted when the first lets go.
    const first = await locks.acquire('inventory:sku-2');
    const second = locks.acquire('inventory:sku-2', { wait: 5_000 });
    setTimeout(() => void first.release(), 120);
    await (await second).release();
    const mine = await locks.acquire('orders:payment:42', { ttl: 30_000 });
    expect(await locks.tryAcquire('invoice:2024-117')).toBeNull(); // busy: held by the other process
    // A lock lost by its holder: freed behind its back, found gone at its next renewal.
    const doomed = await locks.acquire('ledger:close-day', { ttl: 600 });
    await locks.forceRelease('ledger:close-day');
    await new Promise<void>((resolve) =>
      doomed.signal.addEventListener('abort', () => resolve(), { once: true }),
    );

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(
      `${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/ops/locks?token=${TOKEN}`,
    );
    await page.waitForSelector('#status .ok');
    const theirs = page.locator('#backends tbody tr', { hasText: 'invoice:2024-117' });
    await theirs.waitFor();
    expect(await theirs.textContent()).toContain(`${HOST}:${other.pid} billing-worker`);
    const tip = await theirs.locator('.holder').getAttribute('title');
    expect(tip).toMatch(
      /^ttl (\d+(\.\d)? s) left \u00b7 token \d+ \u00b7 owner [0-9a-f]{8}\u2026$/,
    );
    const own = page.locator('#backends tbody tr', { hasText: 'orders:payment:42' });
    expect(await own.textContent()).toContain(`${HOST}:${process.pid} orders-api (this process)`);
    expect(await own.locator('.holder').getAttribute('title')).toContain(
      `token ${mine.fencingToken}`,
    );
    await page
      .locator('#held tbody tr', { hasText: `${HOST}:${process.pid} (orders-api)` })
      .waitFor();
    // The hottest keys fill their card beside the histogram: each key's share of the waiting, its
    // longest wait, and a summary of the window under the table.
    const hot = page.locator('#hot tbody tr', { hasText: 'invoice:2024-117' });
    await hot.waitFor();
    expect(await hot.locator('svg.share').count()).toBe(1);
    await page.locator('#hot-summary', { hasText: /^\d+ waits? in the last 5 min/ }).waitFor();
    const [hotCard, histogram] = await Promise.all(
      ['#hot-card', '#histogram'].map((s) => page.locator(s).boundingBox()),
    );
    expect(hotCard?.height).toBeGreaterThanOrEqual((histogram?.height ?? Infinity) - 1);
    await page.locator('#lost.bad', { hasText: '1 lost lock' }).waitFor();
    await page.locator('#timeline-svg rect.hold.lost').first().waitFor();
    await page.evaluate('document.activeElement.blur(); window.scrollTo(0, 0)');
    await page.screenshot({
      path: process.env.LIVE_VIEW_SCREENSHOT ?? join(profile, 'live-view.png'),
      fullPage: false,
    });
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
    await mine.release();
    await page.close();
  }, 60_000);
});
