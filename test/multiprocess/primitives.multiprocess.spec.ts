import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HolderProcess, type HolderMessage } from '../support/holder-harness';
import {
  TORTURE_BACKENDS,
  type BackendName,
  type RunningServers,
} from '../torture/torture.backends';

/**
 * Semaphores and multi-key locks across real OS processes, on every networked backend (the
 * memory backend is one process by design): three application processes, each with its own
 * client and engine, against private servers started by the torture registry.
 * - Semaphore of 3: the parent counts holders from `enter`/`exit` reports that the children make
 *   inside the grant and wait to have acknowledged, so the count is exact: never more than 3 at
 *   once, and all 3 permits are used under load.
 * - Transfers: random pairs of accounts, keys in random order, under the multi-key lock of both;
 *   balances live in the parent, which checks every write against the versions its writer read
 *   (no lost update), that money is conserved, and that every transfer finished (no deadlock
 *   ends in a wait timeout).
 */
const SCRIPT = join(__dirname, 'primitives.process.ts');
const PROCESSES = 3;
const NETWORKED: BackendName[] = ['redis', 'redlock', 'etcd', 'zookeeper', 'mysql', 'postgres'];

jest.setTimeout(240_000);

for (const name of NETWORKED) {
  describe(`${name}: semaphore and multi-key lock across ${PROCESSES} processes`, () => {
    const entry = TORTURE_BACKENDS[name]!;
    const ttl = entry.ttl?.default ?? 3_000;
    let dir: string;
    let servers: RunningServers;
    let apps: HolderProcess[] = [];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `mp-${name}-`));
      servers = await entry.start(dir, '');
      const config = JSON.stringify(servers.clientConfig(servers.ports));
      apps = Array.from({ length: PROCESSES }, () =>
        HolderProcess.start(SCRIPT, [name, config, String(ttl)]),
      );
      await Promise.all(apps.map((a) => a.next('ready', 0, 180_000)));
    });

    afterAll(async () => {
      await Promise.all(apps.map((a) => a.kill()));
      await servers?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Sends `command` to every process, answering their requests with `answer`; resolves with their counts. */
    async function run(
      command: HolderMessage,
      answer: (m: HolderMessage) => Record<string, unknown> | Promise<Record<string, unknown>>,
    ): Promise<number[]> {
      const handlers = apps.map((app) => {
        const onMessage = (m: HolderMessage) => {
          if (m.id === undefined) return;
          void Promise.resolve(answer(m)).then((reply) =>
            app.send({ type: 'ack', id: m.id, ...reply }),
          );
        };
        app.child.on('message', onMessage);
        return () => app.child.off('message', onMessage);
      });
      try {
        const from = apps.map((a) => a.messages.length);
        apps.forEach((a) => a.send(command));
        const done = await Promise.all(apps.map((a, i) => a.next('done', from[i], 200_000)));
        return done.map((d) => Number(d.count));
      } finally {
        handlers.forEach((off) => off());
      }
    }

    it('semaphore of 3: never more than 3 holders at once, and all 3 permits used', async () => {
      let inside = 0;
      let most = 0;
      // The first holders stay inside until the third permit is granted (or 30 s pass, and the
      // test then fails on `most`): "all 3 permits get used" does not depend on the machine's load.
      let filling: (() => void)[] | undefined = [];
      const fill = () => {
        filling?.forEach((go) => go());
        filling = undefined;
      };
      const giveUp = setTimeout(fill, 30_000);
      const counts = await run(
        { type: 'semaphore', key: `export:${name}`, permits: 3, loops: 3, rounds: 4, holdMs: 15 },
        (m) => {
          if (m.type === 'exit') inside--;
          if (m.type !== 'enter') return {};
          most = Math.max(most, ++inside);
          if (!filling) return {};
          if (inside === 3) fill();
          return new Promise((go) => (filling ? filling.push(() => go({})) : go({})));
        },
      ).finally(() => clearTimeout(giveUp));
      expect(counts).toEqual([12, 12, 12]);
      expect(inside).toBe(0);
      expect(most).toBe(3);
    });

    it('transfers between random pairs in both key orders: no deadlock, no lost update', async () => {
      const balances = [100, 100, 100, 100, 100];
      const versions = [0, 0, 0, 0, 0];
      let stale = 0;
      const counts = await run({ type: 'transfer', accounts: 5, loops: 3, rounds: 6 }, (m) => {
        const accounts = m.accounts as number[];
        if (m.type === 'get')
          return {
            balances: accounts.map((a) => balances[a]),
            versions: accounts.map((a) => versions[a]),
          };
        accounts.forEach((a, i) => {
          if ((m.versions as number[])[i] !== versions[a]) stale++;
          balances[a] = (m.balances as number[])[i];
          versions[a]++;
        });
        return {};
      });
      expect(counts).toEqual([18, 18, 18]);
      expect(stale).toBe(0);
      expect(balances.reduce((a, b) => a + b, 0)).toBe(500);
      expect(versions.reduce((a, b) => a + b, 0)).toBe(2 * 54);
    });
  });
}
