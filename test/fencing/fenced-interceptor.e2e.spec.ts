import 'reflect-metadata';
import {
  Controller,
  HttpCode,
  Injectable,
  Post,
  UseGuards,
  type CanActivate,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import type { AddressInfo } from 'node:net';
import {
  DistributedLockFencingModule,
  Fenced,
  FENCING_HEADER,
  formatFencing,
  MemoryFenceStore,
  RedisFencedStore,
} from '../../lib/fencing';
import { freePort } from '../support/server-process';

/** An authorisation guard that refuses every call (as a 403). */
@Injectable()
class DenyAll implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

const store = new MemoryFenceStore();
const SECRET = 'the-lock-holders-shared-secret';
let downStore: RedisFencedStore;

@Controller()
class GuardedController {
  @Post('guarded')
  @HttpCode(200)
  @UseGuards(DenyAll)
  @Fenced()
  above() {
    return { ok: true };
  }

  @Post('guarded-below')
  @HttpCode(200)
  @Fenced()
  @UseGuards(DenyAll)
  below() {
    return { ok: true };
  }

  @Post('open')
  @HttpCode(200)
  @Fenced()
  open() {
    return { ok: true };
  }

  @Post('signed')
  @HttpCode(200)
  @Fenced({ secret: SECRET })
  signed() {
    return { ok: true };
  }

  @Post('down')
  @HttpCode(200)
  @Fenced({ store: { advance: (r, t) => downStore.advance(r, t) } })
  down() {
    return { ok: true };
  }
}

/** A downstream service with @Fenced handlers over a MemoryFenceStore, no DistributedLockModule. */
describe('@Fenced: what runs first, and how failures answer (HTTP)', () => {
  let app: INestApplication;
  let url: string;
  let dead: Redis;

  const post = async (path: string, grant: string) => {
    const res = await fetch(`${url}/${path}`, {
      method: 'POST',
      headers: { [FENCING_HEADER]: grant },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    // A client of a port nothing listens on, failing at once: a fence store that is down.
    dead = new Redis({
      host: '127.0.0.1',
      port: await freePort(),
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    downStore = new RedisFencedStore({ client: dead });
    const ref = await Test.createTestingModule({
      imports: [DistributedLockFencingModule.forRoot({ store })],
      controllers: [GuardedController],
      providers: [DenyAll],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
    dead?.disconnect();
  });

  it('a call an authorisation guard rejects leaves no trace in the fence, whatever the decorator order', async () => {
    expect((await post('guarded', '9000; key=account:victim')).status).toBe(403);
    expect((await post('guarded-below', '9000; key=account:victim')).status).toBe(403);
    expect(store.highest('account:victim')).toBeUndefined();
    expect((await post('open', '5; key=account:victim')).status).toBe(200);
  });

  it('a store that fails answers 503 LOCK_BACKEND_UNAVAILABLE, not 500', async () => {
    expect(await post('down', '5; key=account:1')).toMatchObject({
      status: 503,
      body: { code: 'LOCK_BACKEND_UNAVAILABLE' },
    });
  });

  it('a token past 2^63-1, or a key longer than 255, is 400 FENCING_TOKEN_MISSING', async () => {
    for (const grant of ['9223372036854775808; key=k', `1; key=${'k'.repeat(256)}`])
      expect(await post('open', grant)).toMatchObject({
        status: 400,
        body: { code: 'FENCING_TOKEN_MISSING' },
      });
    expect(store.highest('k')).toBeUndefined();
  });

  it('an equal token carried from another grant is 409; the same grant calls again', async () => {
    expect((await post('open', '70; key=order:1; grant=holder-a')).status).toBe(200);
    expect((await post('open', '70; key=order:1; grant=holder-a')).status).toBe(200);
    expect(await post('open', '70; key=order:1; grant=holder-b')).toMatchObject({
      status: 409,
      body: { code: 'STALE_FENCING_TOKEN' },
    });
  });

  it('with a secret, an unsigned or forged grant is 400 and records nothing; a signed one passes', async () => {
    const lock = { key: 'payout:1', fencingToken: 30n, owner: 'holder' };
    expect((await post('signed', formatFencing(lock))).status).toBe(400);
    const signed = formatFencing(lock, { secret: SECRET });
    const forged = signed.replace(/^30;/, '9223372036854775807;');
    expect(await post('signed', forged)).toMatchObject({
      status: 400,
      body: { code: 'FENCING_TOKEN_MISSING' },
    });
    expect(store.highest('payout:1')).toBeUndefined();
    expect((await post('signed', signed)).status).toBe(200);
    expect(store.highest('payout:1')).toBe(30n);
  });
});
