import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { ClientsReport, HandoffOptions } from './bench.handoff';
import type { Contender } from './bench.contenders';
import type { Endpoints, System } from './bench.servers';

/**
 * A pool of worker processes (test/bench/handoff.worker.ts) for the contended scenarios: started
 * once per run, each connects its share of a window's clients to the run's servers, then all start
 * on one shared monotonic instant and report back. N workers over P processes: ceil/floor(N/P) each.
 */
export type WorkerMessage =
  | {
      cmd: 'prepare';
      id: number;
      system: System;
      contender: string;
      endpoints: Endpoints;
      clients: number;
    }
  | { cmd: 'go'; id: number; startNs: string; options: Omit<HandoffOptions, 'workers'> }
  | { cmd: 'close'; id: number }
  | { cmd: 'exit' };

export type WorkerReply =
  | { cmd: 'up' }
  | { cmd: 'ready'; id: number }
  | { cmd: 'done'; id: number; report: ClientsReport }
  | { cmd: 'closed'; id: number }
  | { cmd: 'failed'; id: number; error: string };

export class WorkerPool {
  private nextId = 0;

  private constructor(private readonly children: ChildProcess[]) {}

  static async start(size: number): Promise<WorkerPool> {
    const children = Array.from({ length: size }, () =>
      fork(join(__dirname, 'handoff.worker.ts'), [], {
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    await Promise.all(children.map((c) => reply(c, (m) => m.cmd === 'up')));
    return new WorkerPool(children);
  }

  get size(): number {
    return this.children.length;
  }

  /**
   * One window of `o.workers` clients of `contender`, spread over the pool, after an unmeasured
   * warm-up window on another key (connections, sessions, subscriptions and JIT are warm when the
   * measured window starts).
   */
  async run(
    contender: Contender,
    endpoints: Endpoints,
    o: HandoffOptions,
    warmUpMs: number,
  ): Promise<ClientsReport[]> {
    const used = this.children.slice(0, Math.min(o.workers, this.children.length));
    const counts = used.map(
      (_, i) => Math.floor(o.workers / used.length) + (i < o.workers % used.length ? 1 : 0),
    );
    const { workers: _, ...options } = o;
    await this.all(used, 'ready', (id, i) => ({
      cmd: 'prepare',
      id,
      system: contender.system,
      contender: contender.name,
      endpoints,
      clients: counts[i],
    }));
    try {
      const go = (opts: typeof options) => {
        const startNs = String(process.hrtime.bigint() + 50_000_000n);
        return this.all(used, 'done', (id) => ({ cmd: 'go', id, startNs, options: opts }));
      };
      await go({ ...options, key: `${options.key}:warm-up`, durationMs: warmUpMs });
      return (await go(options)).map((m) => (m as Extract<WorkerReply, { cmd: 'done' }>).report);
    } finally {
      await this.all(used, 'closed', (id) => ({ cmd: 'close', id }));
    }
  }

  /** Sends one message to each of `children` and waits for each one's `expect` reply to it. */
  private all(
    children: ChildProcess[],
    expect: WorkerReply['cmd'],
    message: (id: number, i: number) => WorkerMessage,
  ): Promise<WorkerReply[]> {
    const id = this.nextId++;
    return Promise.all(
      children.map((c, i) => {
        const answer = reply(c, (m) => m.cmd === expect && 'id' in m && m.id === id, id);
        send(c, message(id, i));
        return answer;
      }),
    );
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            send(c, { cmd: 'exit' });
            setTimeout(() => c.kill('SIGKILL'), 5_000).unref();
          }),
      ),
    );
  }
}

function send(child: ChildProcess, message: WorkerMessage): void {
  child.send(message);
}

/** The child's next reply matching `match`; rejects on a 'failed' reply for `id` or on exit. */
function reply(
  child: ChildProcess,
  match: (m: WorkerReply) => boolean,
  id?: number,
): Promise<WorkerReply> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: WorkerReply) => {
      if (m.cmd === 'failed' && m.id === id) {
        cleanup();
        reject(new Error(`worker ${child.pid}: ${m.error}`));
      } else if (match(m)) {
        cleanup();
        resolve(m);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`worker ${child.pid} exited (${code})`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}
