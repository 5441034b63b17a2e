import { LockEngine } from '../../lib/core/lock-engine';
import { RedlockMasters } from './redlock.servers';

/**
 * Redlock tolerates a minority of masters failing, list() included: with 1 of 3 masters stopped
 * (SIGSTOP: it accepts nothing and answers nothing) list() still names every held lock, within
 * the engine's operationTimeout. Before, list() waited on the stopped master's SCAN until the
 * engine gave up on the whole call.
 */
let masters: RedlockMasters;

beforeAll(async () => {
  masters = await RedlockMasters.start(3);
});

afterAll(async () => masters?.destroy());

describe('Redlock list() with a minority of masters stopped', () => {
  it('names every held lock while 1 of 3 masters is paused', async () => {
    const engine = new LockEngine({
      backend: await masters.backend({ timeout: 300 }),
      keyPrefix: 'lm:',
      operationTimeout: 3_000,
      defaults: { ttl: 30_000, wait: 0 },
    });
    const held = await Promise.all(['a', 'b', 'c'].map((k) => engine.acquire(`job:${k}`)));
    masters.servers[0].pause();
    try {
      expect((await engine.operator.list('job:')).sort()).toEqual(['job:a', 'job:b', 'job:c']);
    } finally {
      masters.servers[0].resume();
    }
    await Promise.all(held.map((h) => h.release()));
    await engine.close();
  }, 20_000);
});
