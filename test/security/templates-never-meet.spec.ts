import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DistributedLockModule,
  InvalidLockOptionsError,
  Locked,
  MemoryLockBackend,
} from '../../lib';

/**
 * Two templates of one app must never give one key: `order-<id>` with id `5-items` is the key
 * `order-<id>-items` gives id `5`, and `<id>` with `user5` the one `user<id>` gives `5`, so a
 * request for one kind of resource held (or waited on) another's lock. Start-up refuses such a
 * pair, naming both templates and a key both give; templates that cannot meet start as before.
 */
@Injectable()
class Orders {
  @Locked('order-<id>')
  async pay(id: string): Promise<string> {
    return id;
  }
}

@Injectable()
class OrderItems {
  @Locked('order-<id>-items')
  async add(id: string): Promise<string> {
    return id;
  }
}

@Injectable()
class Users {
  @Locked('user<id>')
  async rename(id: string): Promise<string> {
    return id;
  }
}

@Injectable()
class Anything {
  @Locked('<id>')
  async touch(id: string): Promise<string> {
    return id;
  }
}

@Injectable()
class Separated {
  @Locked('order:<id>')
  async pay(id: string): Promise<string> {
    return id;
  }

  @Locked('order:<orderId>:items')
  async add(orderId: string): Promise<string> {
    return orderId;
  }

  @Locked('order:<id>')
  async cancel(id: string): Promise<string> {
    return id;
  }
}

async function boot(providers: (new () => object)[]): Promise<void> {
  const ref = await Test.createTestingModule({
    imports: [DistributedLockModule.forRoot({ backend: new MemoryLockBackend() })],
    providers,
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  try {
    await app.init();
  } finally {
    await app.close();
  }
}

describe('keys of two templates of one app never meet', () => {
  it('refuses order-<id> beside order-<id>-items at start-up, naming both and a shared key', async () => {
    await expect(boot([Orders, OrderItems])).rejects.toThrow(InvalidLockOptionsError);
    await expect(boot([Orders, OrderItems])).rejects.toThrow(
      /"order-<id>" \(Orders\.pay\(\)\) and "order-<id>-items" \(OrderItems\.add\(\)\) can both give the key "order-[^"]*-items"/,
    );
  });

  it('refuses <id> beside user<id> at start-up', async () => {
    await expect(boot([Anything, Users])).rejects.toThrow(/can both give the key "user[^"]*"/);
  });

  it('starts an app whose templates are separated, or one template used on several methods', async () => {
    await expect(boot([Separated, Users])).resolves.toBeUndefined();
  });
});
