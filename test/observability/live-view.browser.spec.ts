import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { chromium, type BrowserContext } from 'playwright-core';
import request from 'supertest';
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
    expect(await row.textContent()).toMatch(/job:nightly-reportdefaultexclusive\d+\d+ s1/);
    await page.locator('#events tbody', { hasText: 'order:7' }).waitFor();
    // LIVE_VIEW_SCREENSHOT=docs/images/live-view.png refreshes the picture in the docs.
    await page.screenshot({
      path: process.env.LIVE_VIEW_SCREENSHOT ?? join(profile, 'live-view.png'),
    });
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
