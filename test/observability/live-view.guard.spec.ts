import 'reflect-metadata';
import { Injectable, type CanActivate } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  DistributedLockLiveViewModule,
  DistributedLockModule,
  InvalidLockOptionsError,
  LockService,
  MemoryLockBackend,
} from '../../lib';

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

async function boot(guard: new () => CanActivate) {
  const ref = await Test.createTestingModule({
    imports: [
      DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), logging: false }),
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

  it('refuses to register without a guard, or with an unknown option', () => {
    expect(() => DistributedLockLiveViewModule.register({} as never)).toThrow(
      InvalidLockOptionsError,
    );
    expect(() =>
      DistributedLockLiveViewModule.register({ guard: AllowAll, route: 'x' } as never),
    ).toThrow('Invalid lock option "route"');
  });
});
