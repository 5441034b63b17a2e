import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** Debian's python3-kazoo is installed for Debian's interpreter (a pyenv python3 on PATH may not see it). */
export const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** A running Python process using kazoo's Lock and Election, driven over stdin/stdout (see kazoo_tool.py). */
export class KazooTool {
  private readonly lines: string[] = [];
  private readonly waiters: { match: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  private exited = false;
  stderr = '';

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const i = this.waiters.findIndex((w) => w.match(line));
      if (i >= 0) this.waiters.splice(i, 1)[0].resolve(line);
      else this.lines.push(line);
    });
    child.stderr.on('data', (d) => (this.stderr += d.toString()));
    child.on('exit', () => (this.exited = true));
  }

  static async start(connectionString: string, sessionTimeout = 5_000): Promise<KazooTool> {
    const child = spawn(PYTHON, [
      '-u',
      join(__dirname, 'kazoo_tool.py'),
      connectionString,
      String(sessionTimeout),
    ]);
    const tool = new KazooTool(child);
    await tool.next((l) => l === 'ready', 30_000);
    return tool;
  }

  /** Resolves the next output line matching `match` (including one already printed, which it consumes). */
  next(match: (line: string) => boolean, timeoutMs = 30_000): Promise<string> {
    const i = this.lines.findIndex(match);
    if (i >= 0) return Promise.resolve(this.lines.splice(i, 1)[0]);
    return new Promise((resolve, reject) => {
      const waiter = { match, resolve: (l: string) => (clearTimeout(timer), resolve(l)) };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(
          new Error(
            `kazoo tool: no matching line after ${timeoutMs} ms (exited: ${this.exited}); stderr:\n${this.stderr}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private async command(id: string, line: string, answers: string[]): Promise<string> {
    const reply = this.next(
      (l) =>
        l.startsWith(`${id} `) &&
        (answers.some((a) => l === `${id} ${a}` || l.startsWith(`${id} ${a} `)) ||
          l.startsWith(`${id} error`)),
    );
    this.child.stdin.write(`${id} ${line}\n`);
    const got = await reply;
    if (got.startsWith(`${id} error`)) throw new Error(`kazoo tool: ${got}`);
    return got.slice(id.length + 1);
  }

  /** Declares kazoo Lock `id` on `path` (identifier = its node's data), with kazoo's extra_lock_patterns. */
  async lock(
    id: string,
    path: string,
    identifier: string,
    extraPatterns: string[] = [],
  ): Promise<void> {
    await this.command(id, ['lock', path, identifier, ...extraPatterns].join(' '), ['ok']);
  }

  /** lock.acquire(timeout=seconds): 'acquired', or 'timeout' (kazoo raised LockTimeout). */
  acquire(id: string, seconds: number): Promise<'acquired' | 'timeout' | 'busy'> {
    return this.command(id, `acquire ${seconds}`, ['acquired', 'timeout', 'busy']) as Promise<
      'acquired' | 'timeout' | 'busy'
    >;
  }

  async release(id: string): Promise<void> {
    await this.command(id, 'release', ['released']);
  }

  /** kazoo's contenders(): the identifiers (node data) of the contenders it sees, in its order. */
  async contenders(id: string): Promise<string[]> {
    const a = await this.command(id, 'contenders', ['contenders']);
    return JSON.parse(a.slice('contenders '.length)) as string[];
  }

  /** Starts kazoo Election `id` on `path`; leading() resolves when its leader function runs. */
  async elect(id: string, path: string, identifier: string): Promise<void> {
    await this.command(id, `elect ${path} ${identifier}`, ['electing']);
  }

  leading(id: string, timeoutMs?: number): Promise<string> {
    return this.next((l) => l === `${id} leading`, timeoutMs);
  }

  /** true if `id leading` was printed and not yet consumed by leading(). */
  saidLeading(id: string): boolean {
    return this.lines.includes(`${id} leading`);
  }

  /** The leader function returns: kazoo releases the election's lock. */
  async resign(id: string): Promise<void> {
    await this.command(id, 'resign', ['resigned']);
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await gone;
  }
}
