import Redis from 'ioredis';
import { RedlockBackend } from '../../lib/backends/redlock/redlock.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import type { RedlockBackendOptions } from '../../lib/backends/redlock/redlock.options';
import { lockKeys } from '../../lib/backends/redis-client';
import { RedisServer } from '../support/redis-server';

/**
 * N private, independent redis-server masters on free loopback ports (no replication, no
 * persistence) for Redlock tests, plus the clients every backend of a test gets. A killed master
 * restarts empty on its port, as a real master without persistence would.
 */
export class RedlockMasters {
  private clients: Redis[] = [];

  private constructor(readonly servers: RedisServer[]) {}

  static async start(count = 5): Promise<RedlockMasters> {
    return new RedlockMasters(
      await Promise.all(Array.from({ length: count }, () => RedisServer.start())),
    );
  }

  get ports(): number[] {
    return this.servers.map((s) => s.port);
  }

  /** A client per master, failing commands fast while a master is down (the app's usual settings). */
  connect(): Redis[] {
    const made = this.servers.map((s) => {
      const c = new Redis({
        port: s.port,
        host: '127.0.0.1',
        maxRetriesPerRequest: 1,
        retryStrategy: () => 100,
        lazyConnect: false,
      });
      c.on('error', () => undefined);
      return c;
    });
    this.clients.push(...made);
    return made;
  }

  /**
   * A backend over fresh clients: another process, as far as locks go. Waits until every live master
   * answered once, as an app does at startup, so connection setup does not eat a round's timeout.
   */
  async backend(options: Omit<RedlockBackendOptions, 'clients'> = {}): Promise<RedlockBackend> {
    const clients = this.connect();
    // A frozen (SIGSTOPped) master never answers: give up on it after a second.
    const bounded = (p: Promise<unknown>) =>
      Promise.race([p.catch(() => undefined), new Promise((r) => setTimeout(r, 1_000).unref())]);
    await Promise.all(
      clients.map((c, i) => (this.servers[i].running ? bounded(c.ping()) : undefined)),
    );
    return new RedlockBackend({ clients, ...options });
  }

  /** Deletes a lock's keys on every live master (an operator's DEL). */
  async forceDelete(fullKey: string): Promise<void> {
    const k = lockKeys(fullKey);
    await Promise.all(
      this.servers.filter((s) => s.running).map((s) => s.cli('DEL', k.writer, k.readers)),
    );
  }

  /** How many live masters hold `fullKey` exclusively for `owner`. */
  holders(fullKey: string, owner: string): number {
    const k = lockKeys(fullKey);
    return this.servers.filter((s) => s.running && s.cli('GET', k.writer) === owner).length;
  }

  closeClients(): void {
    this.clients.forEach((c) => c.disconnect());
    this.clients = [];
  }

  async destroy(): Promise<void> {
    this.closeClients();
    await Promise.all(this.servers.map((s) => s.destroy()));
  }
}

/**
 * For one spec file: `count` masters started before its tests and destroyed after them, and
 * engines that are each another process to the masters (a backend over its own clients), closed
 * after the file.
 */
export function redlockFile(
  count: number,
  keyPrefix: string,
  defaults: { ttl: number; wait: number },
): { masters(): RedlockMasters; engine(): Promise<LockEngine> } {
  let masters: RedlockMasters | undefined;
  const engines: LockEngine[] = [];
  beforeAll(async () => {
    masters = await RedlockMasters.start(count);
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    await masters?.destroy();
  });
  return {
    masters: () => masters!,
    async engine() {
      const e = new LockEngine({ backend: await masters!.backend(), keyPrefix, defaults });
      engines.push(e);
      return e;
    },
  };
}
