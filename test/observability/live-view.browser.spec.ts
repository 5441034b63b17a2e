import 'reflect-metadata';
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
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import request from 'supertest';
import { eventually } from '../support/eventually';
import { DistributedLockModule, LockService, MemoryLockBackend, type LockHandle } from '../../lib';
import { DistributedLockLiveViewModule } from '../../lib/operations';
import { AppModule } from '../../sample-app/app.module';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * The sample app's live view in a real headless Chromium (Debian's): a lock taken through the
 * app's HTTP route appears on the page over SSE, and its release shows in the recent events.
 * One page load. Needs Debian's chromium (`apt-get install -y chromium`; CHROMIUM_PATH overrides).
 */
describe('live view in a real browser', () => {
  let app: INestApplication;
  let browser: BrowserContext;
  let profile: string;
  let base: string;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
    profile = mkdtempSync(join(tmpdir(), 'live-view-chromium-'));
    // A fresh profile per run (playwright passes it as --user-data-dir).
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1100, height: 640 },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('shows a lock taken through the app, live, then its release', async () => {
    const page = await browser.newPage();
    await page.goto(`${base.replace('[::1]', '127.0.0.1')}/locks/live`);
    await page.waitForSelector('#status .ok');
    // The report job holds 'job:nightly-report' for about 2 s (renewed by the watchdog).
    const job = request(app.getHttpServer())
      .post('/jobs/report/2')
      .then((r) => r.body);
    await request(app.getHttpServer()).post('/orders/7/pay').send({ amount: 25 }).expect(201);
    const row = page.locator('#held tbody tr', { hasText: 'job:nightly-report' });
    await row.waitFor();
    expect(await row.textContent()).toMatch(
      /job:nightly-reportdefault.+:\d+exclusive\d+[\d.]+ (ms|s)1/,
    );
    await page.locator('#events tbody', { hasText: 'order:7' }).waitFor();
    await page.screenshot({ path: join(profile, 'live-view.png') });
    expect(await job).toMatchObject({ steps: 2 });
    await page
      .locator('#events tbody tr', { hasText: 'released' })
      .filter({ hasText: 'job:nightly-report' })
      .waitFor();
    // Gone from the held table (the sample's leader-only worker keeps holding election:outbox).
    await page
      .locator('#held tbody tr', { hasText: 'job:nightly-report' })
      .waitFor({ state: 'detached' });
  });

  it('serves a JSON snapshot beside the page, behind the same guard', async () => {
    const state = await request(app.getHttpServer()).get('/locks/live/state').expect(200);
    expect(state.body).toMatchObject({ waiting: [], recent: expect.any(Array) });
    // Only the sample's leader-only worker holds a lock now (its election), nothing else.
    expect(state.body.held.map((h: { key: string }) => h.key)).toEqual(['election:outbox']);
  });
});

/** The page's request from a guard's view: what the three usual guards read. */
interface GuardRequest {
  headers: Record<string, string | undefined>;
  query?: Record<string, unknown>;
}
const SECRET = 'ops-secret';
const request$ = (c: ExecutionContext) => c.switchToHttp().getRequest<GuardRequest>();

@Injectable()
class CookieGuard implements CanActivate {
  canActivate(c: ExecutionContext): boolean {
    return (request$(c).headers.cookie ?? '').split(/;\s*/).includes(`ops=${SECRET}`);
  }
}

@Injectable()
class HeaderGuard implements CanActivate {
  canActivate(c: ExecutionContext): boolean {
    return request$(c).headers['x-ops-token'] === SECRET;
  }
}

@Injectable()
class QueryGuard implements CanActivate {
  canActivate(c: ExecutionContext): boolean {
    return request$(c).query?.token === SECRET;
  }
}

/**
 * The three usual guards in a real browser. Before, the page opened its stream at `/events`
 * without the query and a browser's EventSource sends no headers: a query-token or header guard
 * left the page "disconnected, retrying" with empty tables. Also: the timeline (a hold bar with its
 * fencing token, a busy mark), the hottest keys and the histogram; 1,000 held keys; the headers.
 */
describe('live view behind cookie, header and query guards, in a real browser', () => {
  let app: INestApplication;
  let browser: BrowserContext;
  let profile: string;
  let base: string;
  let locks: LockService;

  beforeAll(async () => {
    const ref = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), logging: false }),
        DistributedLockLiveViewModule.register({ path: 'ops/cookie', guard: CookieGuard }),
        DistributedLockLiveViewModule.register({ path: 'ops/header', guard: HeaderGuard }),
        DistributedLockLiveViewModule.register({ path: 'ops/query', guard: QueryGuard }),
      ],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    locks = app.get(LockService);
    profile = mkdtempSync(join(tmpdir(), 'live-view-guards-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1200, height: 900 },
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  async function expectLive(page: Page, key: string) {
    await page.waitForSelector('#status .ok');
    await page.locator('#held tbody tr', { hasText: key }).waitFor();
  }

  it('a cookie guard: the stream sends the cookie', async () => {
    const h = await locks.acquire('guard:cookie');
    await browser.addCookies([{ name: 'ops', value: SECRET, url: base }]);
    const page = await browser.newPage();
    await page.goto(`${base}/ops/cookie`);
    await expectLive(page, 'guard:cookie');
    await page.close();
    await browser.clearCookies();
    await h.release();
  });

  it('a header guard: only the page request carries the header; the stream uses its ticket', async () => {
    const h = await locks.acquire('guard:header');
    const page = await browser.newPage();
    // Like a proxy that authenticates the page: the header on the document request only.
    await page.route(`${base}/ops/header`, (route) =>
      route.continue({ headers: { ...route.request().headers(), 'x-ops-token': SECRET } }),
    );
    await page.goto(`${base}/ops/header`);
    await expectLive(page, 'guard:header');
    await page.close();
    await h.release();
    // Without the header or a ticket, the stream is refused.
    await request(app.getHttpServer()).get('/ops/header/state').expect(403);
    await request(app.getHttpServer()).get('/ops/header/state?ticket=1.forged').expect(403);
  });

  it('a query guard: the page carries its query to the stream', async () => {
    const h = await locks.acquire('guard:query');
    const page = await browser.newPage();
    await page.goto(`${base}/ops/query?token=${SECRET}`);
    await expectLive(page, 'guard:query');
    await page.close();
    await h.release();
  });

  it('draws the timeline, the hottest keys and the histogram; stays usable with 1,000 held keys', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    const res = await page.goto(`${base}/ops/query?token=${SECRET}`);
    const headers = res?.headers() ?? {};
    expect(headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'sha256-/);
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['x-content-type-options']).toBe('nosniff');
    await page.waitForSelector('#status .ok');
    // 1,000 held keys, taken in batches (a burst of 1,000 at once would queue on the event loop).
    const many: LockHandle[] = [];
    for (let i = 0; i < 1_000; i += 100)
      many.push(
        ...(await Promise.all(
          Array.from({ length: 100 }, (_, j) =>
            locks.acquire(`tenant:${(i + j) % 40}:invoice:${i + j}`),
          ),
        )),
      );
    // A few short holds and a shared one: bars on the timeline.
    for (const k of ['reports:nightly', 'inventory:sku-1', 'inventory:sku-2'])
      await locks.withLock(k, () => new Promise((r) => setTimeout(r, 150)));
    const shared = await locks.acquire('catalog:prices', { mode: 'shared' });
    const first = await locks.acquire('orders:payment:42');
    // A busy answer and a wait: marks on the timeline and waits in the histogram.
    expect(await locks.tryAcquire('orders:payment:42')).toBeNull();
    const waiter = locks.acquire('orders:payment:42', { wait: 5_000 });
    await page.locator('#waiting tbody tr', { hasText: 'orders:payment:42' }).waitFor();
    await first.release();
    const second = await waiter;
    await page.locator('#held-count', { hasText: '(1002)' }).waitFor();
    await page.locator('#timeline-svg rect.hold').first().waitFor();
    await page.locator('#timeline-svg circle.mark-busy').first().waitFor({ state: 'attached' });
    await page.locator('#timeline-svg circle.mark-waited').first().waitFor({ state: 'attached' });
    const tokens = await page.locator('#timeline-svg rect.hold title').allTextContents();
    expect(tokens).toEqual(
      expect.arrayContaining([expect.stringContaining(`token ${second.fencingToken}`)]),
    );
    await page.locator('#hot tbody tr', { hasText: 'orders:payment:42' }).waitFor();
    // The held table shows at most 200 rows and says how many more; the filter narrows it.
    expect(await page.locator('#held tbody tr').count()).toBe(201);
    await page.fill('#filter', 'invoice:999');
    await page.locator('#held tbody tr', { hasText: 'tenant:39:invoice:999' }).waitFor();
    expect(await page.locator('#held tbody tr').count()).toBe(1);
    await page.fill('#filter', '');
    // Cleared: the server's unfiltered snapshot again.
    await page.locator('#held-count', { hasText: '(1002)' }).waitFor();
    await page.locator('#timeline-svg text.key', { hasText: 'orders:payment:42' }).waitFor();
    await page.evaluate('document.activeElement.blur(); window.scrollTo(0, 0)');
    // LIVE_VIEW_SCREENSHOT=path saves the picture (the docs' own: live-view.holders.spec.ts).
    await page.screenshot({
      path: process.env.LIVE_VIEW_SCREENSHOT ?? join(profile, 'live-view.png'),
      fullPage: false,
    });
    // The page's own script and style run under its CSP: no violation, no script error (a 404 for
    // /favicon.ico is the browser's own request).
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
    await Promise.all([second, shared, ...many].map((h) => h.release()));
    await page.close();
  });

  it('one window with round ticks and a legend, holders, a lost lock in red; a click on a key filters', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(`${base}/ops/query?token=${SECRET}`);
    await page.waitForSelector('#status .ok');
    for (const k of ['reports:nightly', 'inventory:sku-1', 'customer:ann%40example.com'])
      await locks.withLock(k, () => new Promise((r) => setTimeout(r, 120)));
    const held = await locks.acquire('orders:payment:7');
    const busy = locks.acquire('orders:payment:7', { wait: 5_000 });
    const waiting = page.locator('#waiting tbody tr', { hasText: 'orders:payment:7' });
    await waiting.waitFor();
    // How long its waiter has waited so far, in human units.
    expect(await waiting.textContent()).toMatch(/orders:payment:7default1\d+(\.\d)? (ms|s)$/);
    await held.release();
    const second = await busy;
    // A lock lost by its holder: freed behind its back, found gone at its next renewal.
    const doomed = await locks.acquire('ledger:close-day', { ttl: 600 });
    await locks.forceRelease('ledger:close-day');
    await new Promise<void>((resolve) =>
      doomed.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    await page.locator('#lost.bad', { hasText: '1 lost lock' }).waitFor();
    await page.locator('#timeline-svg rect.hold.lost').first().waitFor();
    await page.locator('#events tbody tr.lost').first().waitFor();
    // Keys as the app wrote them, the holder's host:pid, round ticks and the legend.
    await page.locator('#timeline-svg text.key', { hasText: 'customer:ann@example.com' }).waitFor();
    await page.locator('#held tbody tr', { hasText: `${hostname()}:${process.pid}` }).waitFor();
    const ticks = await page.locator('#timeline-svg text.axis').allTextContents();
    expect(ticks[0]).toBe('now');
    for (const t of ticks.slice(1)) expect(t).toMatch(/^\u2212(\d+ s|\d+ min)$/);
    expect(await page.locator('.legend span').count()).toBe(7);
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({
      path: process.env.LIVE_VIEW_SCREENSHOT ?? join(profile, 'live-view-holders.png'),
      fullPage: true,
    });
    // A click on a key filters every panel, on the server too.
    await page.locator('#timeline-svg text.key', { hasText: 'orders:payment:7' }).click();
    await expect(page.inputValue('#filter')).resolves.toBe('orders:payment:7');
    await eventually(async () => (await page.locator('#timeline-svg text.key').count()) === 1);
    expect(errors.filter((e) => !e.includes('404'))).toEqual([]);
    await second.release();
    await page.close();
  });
});
