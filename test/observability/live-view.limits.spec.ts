import 'reflect-metadata';
import { Injectable, type CanActivate, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { DistributedLockModule, LockService, MemoryLockBackend } from '../../lib';
import { FencingEvents, fencingEvents } from '../../lib/fencing';
import { DistributedLockLiveViewModule } from '../../lib/operations';
import { LiveViewTickets, STREAM_TICKET_MS } from '../../lib/live-view/live-view.access';
import { LIVE_VIEW_MAX_ROWS } from '../../lib/live-view/live-view.state';
import { LIVE_VIEW_MAX_TEXT } from '../../lib/live-view/live-view.text';

/**
 * What the live view's stream and pushes are bounded by: a stream let in by its ticket ends with
 * the ticket; a push carries at most LIVE_VIEW_MAX_ROWS rows and strings of LIVE_VIEW_MAX_TEXT;
 * refused fenced writes are this app's only, without the values of a column-form `where`.
 */
@Injectable()
class DenyAll implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

@Injectable()
class AllowAll implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

async function boot(guard: new () => CanActivate, events?: FencingEvents) {
  const ref = await Test.createTestingModule({
    imports: [
      DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), logging: false }),
      DistributedLockLiveViewModule.register({ path: 'ops/locks', guard, fencingEvents: events }),
    ],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return app;
}

/** Opens the event stream; resolves with the pushes received once the server ends it. */
function streamUntilEnd(app: INestApplication, ticket: string): Promise<number> {
  const { port } = (app.getHttpServer() as { address(): AddressInfo }).address();
  return new Promise((resolve, reject) => {
    const req = get(
      { host: '127.0.0.1', port, path: `/ops/locks/events?ticket=${encodeURIComponent(ticket)}` },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
        let pushes = 0;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (pushes += chunk.split('\ndata:').length - 1));
        res.on('end', () => resolve(pushes));
      },
    );
    req.on('error', reject);
  });
}

describe('live view bounds', () => {
  it('ends a stream that its ticket let in when the ticket expires', async () => {
    const app = await boot(DenyAll);
    try {
      // A ticket issued long enough ago that it has 300 ms left.
      const ticket = app.get(LiveViewTickets).issue(Date.now() - STREAM_TICKET_MS + 300);
      const pushes = await streamUntilEnd(app, ticket);
      expect(pushes).toBeGreaterThanOrEqual(1);
      // Expired now: a new stream with it is refused (the guard denies all).
      const { port } = (app.getHttpServer() as { address(): AddressInfo }).address();
      await request(`http://127.0.0.1:${port}`)
        .get(`/ops/locks/events?ticket=${encodeURIComponent(ticket)}`)
        .expect(403);
    } finally {
      await app.close();
    }
  }, 10_000);

  it('carries at most LIVE_VIEW_MAX_ROWS held locks and cuts long strings', async () => {
    const ours = new FencingEvents();
    const app = await boot(AllowAll, ours);
    const locks = app.get(LockService);
    const handles = [];
    try {
      const long = 'k'.repeat(490);
      for (let i = 0; i < 1_000; i++) handles.push(await locks.acquire(`${long}:${i}`));
      ours.stale('redis', { resource: 'r'.repeat(1_000_000), token: 1n, highest: 2n });
      const res = await request(app.getHttpServer()).get('/ops/locks/state').expect(200);
      const body = res.body as {
        held: { key: string }[];
        heldTotal: number;
        recent: Record<string, unknown>[];
        history: { timeline: { key: string }[] };
      };
      expect(body.held).toHaveLength(LIVE_VIEW_MAX_ROWS);
      expect(body.heldTotal).toBe(1_000);
      for (const row of body.held) expect(row.key.length).toBeLessThanOrEqual(LIVE_VIEW_MAX_TEXT);
      for (const row of body.history.timeline)
        expect(row.key.length).toBeLessThanOrEqual(LIVE_VIEW_MAX_TEXT);
      const refusal = body.recent.find((e) => e.type === 'fencing.stale');
      expect(String(refusal?.resource).length).toBeLessThanOrEqual(LIVE_VIEW_MAX_TEXT);
      // 1,000 keys of 494 characters and a 1 MB resource: the push stays small.
      expect(res.text.length).toBeLessThan(200_000);
    } finally {
      for (const h of handles) await h.release();
      await app.close();
    }
  });

  it("lists this app's fenced refusals only, without the values of a column-form where", async () => {
    const ours = new FencingEvents();
    const app = await boot(AllowAll, ours);
    try {
      // The SQL column form names its resource by table and where (sql-fenced.store.ts update()).
      const where = { email: 'ann@example.com', ssn: '078-05-1120' };
      ours.stale('postgres', {
        resource: `accounts:${JSON.stringify(where)}`,
        token: 3n,
        highest: 4n,
      });
      // Another app of this process reports to the process-wide channel.
      fencingEvents.stale('redis', { resource: 'tenant-b:secret', token: 1n, highest: 9n });
      const res = await request(app.getHttpServer()).get('/ops/locks/state').expect(200);
      const refusals = (res.body.recent as Record<string, unknown>[]).filter(
        (e) => e.type === 'fencing.stale',
      );
      expect(refusals).toEqual([
        expect.objectContaining({ store: 'postgres', resource: 'accounts:{"email":?,"ssn":?}' }),
      ]);
      expect(res.text).not.toContain('ann@example.com');
      expect(res.text).not.toContain('078-05-1120');
      expect(res.text).not.toContain('tenant-b');
    } finally {
      await app.close();
    }
  });
});
