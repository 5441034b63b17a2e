import 'reflect-metadata';
import { Injectable, type CanActivate } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  DistributedLockModule,
  InvalidLockOptionsError,
  LockService,
  MemoryLockBackend,
} from '../../lib';
import { DistributedLockLiveViewModule } from '../../lib/operations';
import { LiveViewState } from '../../lib/live-view/live-view.state';

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

async function boot(guard: new () => CanActivate, backend = new MemoryLockBackend()) {
  const ref = await Test.createTestingModule({
    imports: [
      DistributedLockModule.forRoot({ backend, logging: false }),
      DistributedLockLiveViewModule.register({ path: 'ops/locks', guard }),
    ],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('live view module', () => {
  it('every route sits behind the guard', async () => {
    const app = await boot(DenyAll);
    for (const path of ['/ops/locks', '/ops/locks/state', '/ops/locks/events'])
      await request(app.getHttpServer()).get(path).expect(403);
    await app.close();
  });

  it('the JSON snapshot lists held locks (tokens as strings) and recent events', async () => {
    const app = await boot(AllowAll);
    const locks = app.get(LockService);
    const handle = await locks.acquire('order:5');
    const state = await request(app.getHttpServer()).get('/ops/locks/state').expect(200);
    expect(state.body.held).toEqual([
      expect.objectContaining({
        key: 'order:5',
        backend: 'default',
        mode: 'exclusive',
        fencingToken: '1',
        holds: 1,
      }),
    ]);
    expect(state.body.recent[0]).toMatchObject({
      type: 'acquired',
      key: 'order:5',
      fencingToken: '1',
    });
    const page = await request(app.getHttpServer()).get('/ops/locks').expect(200);
    expect(page.headers['content-type']).toContain('text/html');
    await handle.release();
    await app.close();
  });

  it('shows what every process holds on the backend (list), not only this process', async () => {
    const shared = new MemoryLockBackend();
    const app = await boot(AllowAll, shared);
    // Another application on the same backend stands in for another process.
    const other = await boot(DenyAll, shared);
    const theirs = await other.get(LockService).acquire('order:77');
    const ours = await app.get(LockService).acquire('order:5');
    const listing = await app.get(LiveViewState).refreshListing();
    // Each listed key with its holder, by what the grant stored (both apps run in this process).
    const holder = expect.objectContaining({ mode: 'exclusive', pid: process.pid });
    expect(listing).toEqual([
      {
        backend: 'default',
        keys: expect.arrayContaining(['order:77', 'order:5']),
        more: false,
        at: expect.any(Number),
        locks: expect.arrayContaining(
          ['order:77', 'order:5'].map((key) => expect.objectContaining({ key, holders: [holder] })),
        ),
      },
    ]);
    const state = await request(app.getHttpServer()).get('/ops/locks/state').expect(200);
    expect(state.body.held.map((l: { key: string }) => l.key)).toEqual(['order:5']);
    expect(state.body.backends[0].keys).toEqual(expect.arrayContaining(['order:77', 'order:5']));
    await theirs.release();
    expect((await app.get(LiveViewState).refreshListing())[0].keys).toEqual(['order:5']);
    await ours.release();
    await other.close();
    await app.close();
  });

  it('refuses to register without a guard, or with an unknown option', () => {
    expect(() => DistributedLockLiveViewModule.register({} as never)).toThrow(
      InvalidLockOptionsError,
    );
    expect(() =>
      DistributedLockLiveViewModule.register({ guard: AllowAll, route: 'x' } as never),
    ).toThrow('Invalid lock option "route"');
  });
});
