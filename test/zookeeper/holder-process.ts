import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** Runs holder.process.ts in its own Node process: the holder we SIGKILL / SIGSTOP. */
export class HolderProcess {
  readonly lines: string[] = [];
  private readonly listeners = new Set<() => void>();

  private constructor(readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (l) => {
      this.lines.push(l);
      for (const f of [...this.listeners]) f();
    });
  }

  static async start(
    connectionString: string,
    key: string,
    sessionTimeout: number,
  ): Promise<{ holder: HolderProcess; token: bigint }> {
    const child = spawn(
      process.execPath,
      [
        '-r',
        'ts-node/register/transpile-only',
        join(__dirname, 'holder.process.ts'),
        connectionString,
        key,
        String(sessionTimeout),
      ],
      {
        cwd: join(__dirname, '..', '..'),
      },
    );
    const holder = new HolderProcess(child);
    const line = await holder.line(/^(held|error) /, 60_000);
    if (line.startsWith('error')) throw new Error(`holder process: ${line}`);
    return { holder, token: BigInt(line.split(' ')[1]) };
  }

  /** Resolves the first output line matching `re` (already printed or to come). */
  line(re: RegExp, timeoutMs = 30_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.lines.find((l) => re.test(l));
        if (!found) return;
        this.listeners.delete(check);
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(
          new Error(
            `holder process printed no line matching ${re} in ${timeoutMs} ms: ${JSON.stringify(this.lines)}`,
          ),
        );
      }, timeoutMs);
      this.listeners.add(check);
      check();
    });
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGCONT');
    this.child.kill('SIGKILL');
    await gone;
  }
}
