import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HolderProcess, type HolderMessage } from '../support/holder-harness';
import { removeDir, tempDir } from '../support/server-process';
import { WAIT_MS, type Contention } from './contention';

const SCRIPT = join(__dirname, 'contender.process.ts');

export type ContenderClient =
  | { kind: 'cluster'; ports: number[] }
  | { kind: 'sentinel'; sentinels: { host: string; port: number }[]; name: string };

/**
 * Contenders of the failover specs as real OS processes (contender.process.ts): each has its own
 * client and engine, so nothing is shared but the servers. Mutual exclusion is checked across them
 * through two files in a temp dir: every holder appends `enter <token>` after its grant and `exit
 * <token>` before its release (O_APPEND, one write each), so two holders inside at once show as an
 * `enter` before the previous `exit`, whatever the processes' clocks; and a counter file each
 * holder reads, holds 1 s, and writes back plus one (exact only if no two sections overlap).
 */
export class ContenderProcesses {
  private readonly dir = tempDir('contenders');
  private runs = 0;

  private constructor(private readonly procs: HolderProcess[]) {}

  static async start(
    count: number,
    client: ContenderClient,
    keyPrefix: string,
  ): Promise<ContenderProcesses> {
    const config = JSON.stringify({ client, keyPrefix });
    const procs = Array.from({ length: count }, () => HolderProcess.start(SCRIPT, [config]));
    const set = new ContenderProcesses(procs);
    try {
      await Promise.all(procs.map((p) => p.next('ready', 0, 90_000)));
    } catch (error) {
      await set.kill();
      throw error;
    }
    return set;
  }

  /** Every process contends for `key` until `stop()`; `c` fills in as grants and errors come. */
  contend(key: string) {
    const run = ++this.runs;
    const log = join(this.dir, `run-${run}.log`);
    const counter = join(this.dir, `run-${run}.counter`);
    writeFileSync(log, '');
    writeFileSync(counter, '0');
    const c: Contention = { grants: [], errors: [], overlaps: 0, counter: 0, sections: 0 };
    const from = this.procs.map((p) => p.messages.length);
    const listen = (m: HolderMessage) => {
      if (m.type === 'granted') c.grants.push({ at: Number(m.at), token: BigInt(String(m.token)) });
      if (m.type === 'failed') c.errors.push({ name: String(m.name), ms: Number(m.ms) });
    };
    for (const p of this.procs) p.child.on('message', listen);
    for (const p of this.procs) p.send({ type: 'contend', key, log, counter });
    return {
      c,
      /**
       * Stops every loop (each reports `stopped` after its call in flight, so a call that hangs
       * fails here), then fills in the verdicts from the files: overlaps, counter, sections, and
       * the grants in the order the holders entered.
       */
      stop: async (): Promise<Contention> => {
        for (const p of this.procs) p.send({ type: 'stop' });
        const budget = WAIT_MS + 5_000;
        await Promise.all(this.procs.map((p, i) => p.next('stopped', from[i], budget)));
        for (const p of this.procs) p.child.off('message', listen);
        const at = new Map(c.grants.map((g) => [g.token, g.at]));
        const inside = new Set<string>();
        c.grants = [];
        for (const line of readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
          const [what, token] = line.split(' ');
          if (what === 'enter') {
            if (inside.size > 0) c.overlaps++;
            inside.add(token);
            c.grants.push({ at: at.get(BigInt(token)) ?? Infinity, token: BigInt(token) });
          } else {
            inside.delete(token);
            c.sections++;
          }
        }
        c.counter = Number(readFileSync(counter, 'utf8'));
        return c;
      },
    };
  }

  async kill(): Promise<void> {
    await Promise.all(this.procs.map((p) => p.kill()));
    removeDir(this.dir);
  }
}
