import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export interface HolderMessage {
  type: 'acquired' | 'renew' | 'renew-result' | 'lost' | 'error';
  [field: string]: unknown;
}

/** A holder in its own OS process (see holder.process.ts), for SIGKILL/SIGSTOP faults. */
export class HolderProcess {
  readonly messages: HolderMessage[] = [];
  private readonly exited: Promise<void>;
  private readonly waiters = new Set<() => void>();

  private constructor(readonly child: ChildProcess) {
    child.on('message', (m) => {
      this.messages.push(m as HolderMessage);
      for (const wake of [...this.waiters]) wake();
    });
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  static start(hosts: string[], key: string, sessionTtl: number, ttl: number): HolderProcess {
    const child = fork(
      join(__dirname, 'holder.process.ts'),
      [hosts.join(','), key, String(sessionTtl), String(ttl)],
      {
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    return new HolderProcess(child);
  }

  /** Resolves with the first message of `type` at or after index `from`. */
  next(type: HolderMessage['type'], from = 0, timeoutMs = 30_000): Promise<HolderMessage> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.messages.slice(from).find((m) => m.type === type || m.type === 'error');
        if (!found) return false;
        cleanup();
        if (found.type === 'error' && type !== 'error')
          reject(new Error(`holder failed: ${String(found.error)}`));
        else resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `holder sent no "${type}" within ${timeoutMs} ms; got ${JSON.stringify(this.messages)}`,
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
      };
      const wake = () => void check();
      if (!check()) this.waiters.add(wake);
    });
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGCONT');
    this.child.kill('SIGKILL');
    await this.exited;
  }
}
