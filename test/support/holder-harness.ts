import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { transpiledEnv, transpiledScript } from './transpiled';

/**
 * One harness for "a lock holder in its own OS process", the thing a fault test SIGKILLs or
 * SIGSTOPs (a crashed or paused application, which an in-process holder cannot be).
 *
 * Parent side: `HolderProcess.start(script, args)` forks `script` (transpiled) with an IPC
 * channel; the child reports JSON messages `{ type, ...fields }` in order; `next(type)` resolves
 * with the first such message at or after an index (already received or to come) and rejects at
 * once if the child reports `{ type: 'error' }` or exits first, so a broken holder fails the
 * test with its reason instead of a timeout. `send()` passes a command to the child; `stop()`,
 * `cont()` and `kill()` are the faults (`kill` resumes a stopped child first, then SIGKILLs and
 * waits for the exit, so no holder outlives its test).
 *
 * Child side: `runHolder(main)` runs `main(channel)`, keeps the process alive afterwards (a holder
 * holds until killed), and turns a failure into an `error` message and exit code 1.
 */
export interface HolderMessage {
  type: string;
  [field: string]: unknown;
}

export interface HolderExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const REPO_ROOT = join(__dirname, '..', '..');

export class HolderProcess<M extends HolderMessage = HolderMessage> {
  readonly messages: M[] = [];
  /** Resolves when the child has exited (by itself or killed). */
  readonly exited: Promise<HolderExit>;
  private exit: HolderExit | undefined;
  private stderrTail = '';
  private readonly waiters = new Set<() => void>();

  private constructor(readonly child: ChildProcess) {
    child.on('message', (m) => {
      this.messages.push(m as M);
      this.wakeAll();
    });
    child.stderr?.on('data', (d: Buffer) => {
      process.stderr.write(d);
      this.stderrTail = (this.stderrTail + d.toString()).slice(-2_000);
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        this.wakeAll();
        resolve(this.exit);
      }),
    );
  }

  /** Forks `script` (a .ts file, run transpiled: support/transpiled.ts) with `args`, cwd = repo root. */
  static start<M extends HolderMessage = HolderMessage>(
    script: string,
    args: readonly string[] = [],
    env: NodeJS.ProcessEnv = process.env,
  ): HolderProcess<M> {
    const child = fork(transpiledScript(script), [...args], {
      cwd: REPO_ROOT,
      env: transpiledEnv(env),
      execArgv: [],
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    return new HolderProcess<M>(child);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** The first message of `type` at or after index `from`; rejects on an `error` message, exit. */
  next(type: M['type'], from = 0, timeoutMs = 30_000): Promise<M> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = this.messages.slice(from).find((m) => m.type === type || m.type === 'error');
        if (found && (found.type === type || type === 'error')) return settle(() => resolve(found));
        if (found) return settle(() => reject(new Error(`holder failed: ${String(found.error)}`)));
        if (!this.exit) return false;
        const { code, signal } = this.exit;
        const why = `holder exited (code ${code}, signal ${signal}) before "${type}"`;
        return settle(() => reject(new Error(`${why}; stderr: ${this.stderrTail}`)));
      };
      const timer = setTimeout(() => {
        const got = JSON.stringify(this.messages);
        settle(() =>
          reject(new Error(`holder sent no "${type}" within ${timeoutMs} ms; got ${got}`)),
        );
      }, timeoutMs);
      const settle = (done: () => void): true => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        done();
        return true;
      };
      const wake = () => void check();
      if (!check()) this.waiters.add(wake);
    });
  }

  /** Sends a command to the child (it receives it through `channel.onCommand`). */
  send(command: HolderMessage): void {
    this.child.send(command);
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.exit) this.child.kill(signal);
  }

  /** SIGSTOP: the process is paused (no timer, no socket read, no heartbeat) until cont(). */
  stop(): void {
    this.signal('SIGSTOP');
  }

  cont(): void {
    this.signal('SIGCONT');
  }

  /** SIGKILL (after SIGCONT, so a stopped child dies at once) and waits for the exit. */
  async kill(): Promise<HolderExit> {
    if (!this.exit) {
      this.child.kill('SIGCONT');
      this.child.kill('SIGKILL');
    }
    return this.exited;
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}

/** What a holder script uses to talk to the test. */
export interface HolderChannel<M extends HolderMessage = HolderMessage> {
  /** Reports one message to the parent (dropped if the parent is gone). */
  send(message: M): void;
  /** Calls `handler` for every command the parent sends. */
  onCommand(handler: (command: HolderMessage) => void): void;
}

/** Child side: runs `main`, then stays alive until killed; a failure becomes an `error` message. */
export function runHolder<M extends HolderMessage = HolderMessage>(
  main: (channel: HolderChannel<M>) => Promise<void>,
): void {
  const channel: HolderChannel<M> = {
    send: (message) => void process.send?.(message),
    onCommand: (handler) => void process.on('message', (m) => handler(m as HolderMessage)),
  };
  // Keep the event loop alive: a holder holds until the test kills it.
  setInterval(() => undefined, 1 << 30);
  main(channel).catch((error: unknown) => {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    if (!process.send) {
      process.stderr.write(`${text}\n`);
      process.exit(1);
    }
    process.send({ type: 'error', error: text }, () => process.exit(1));
  });
}
