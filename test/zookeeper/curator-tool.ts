import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { tempDir } from '../support/server-process';

/** Debian's libcurator-recipes-java; its manifest pulls in curator-framework/client, zookeeper, guava. */
const CLASSPATH = ['/usr/share/java/curator-recipes.jar', '/usr/share/java/slf4j-nop.jar'];

/** Compiles CuratorLockTool.java with javac into a temp dir (once per test file); returns the class dir. */
export function compileCuratorTool(): string {
  const out = tempDir('curator');
  execFileSync(
    'javac',
    ['-cp', CLASSPATH.join(':'), '-d', out, join(__dirname, 'curator', 'CuratorLockTool.java')],
    { stdio: 'pipe' },
  );
  return out;
}

/** A running Java process holding Curator locks, driven over stdin/stdout (see CuratorLockTool.java). */
export class CuratorTool {
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

  static async start(
    classes: string,
    connectionString: string,
    sessionTimeout = 5_000,
  ): Promise<CuratorTool> {
    const child = spawn('java', [
      '-Xmx96m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-cp',
      [classes, ...CLASSPATH].join(':'),
      'CuratorLockTool',
      connectionString,
      String(sessionTimeout),
    ]);
    const tool = new CuratorTool(child);
    await tool.next((l) => l === 'ready', 60_000);
    return tool;
  }

  /** Resolves the next output line matching `match` (including one already printed). */
  next(match: (line: string) => boolean, timeoutMs = 30_000): Promise<string> {
    const i = this.lines.findIndex(match);
    if (i >= 0) return Promise.resolve(this.lines.splice(i, 1)[0]);
    return new Promise((resolve, reject) => {
      const waiter = { match, resolve: (l: string) => (clearTimeout(timer), resolve(l)) };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(
          new Error(
            `Curator tool: no matching line after ${timeoutMs} ms (exited: ${this.exited}); stderr:\n${this.stderr}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private async command(
    id: string,
    line: string,
    answers: string[],
    pattern?: RegExp,
    timeoutMs?: number,
  ): Promise<string> {
    const reply = this.next(
      (l) =>
        l.startsWith(`${id} `) &&
        (answers.some((a) => l === `${id} ${a}`) ||
          !!pattern?.test(l.slice(id.length + 1)) ||
          l.startsWith(`${id} error`)),
      timeoutMs,
    );
    this.child.stdin.write(`${id} ${line}\n`);
    const got = await reply;
    if (got.startsWith(`${id} error`)) throw new Error(`Curator tool: ${got}`);
    return got.slice(id.length + 1);
  }

  /** Declares a lock `id`: an InterProcessMutex, or the read/write half of an InterProcessReadWriteLock, on `path`. */
  async lock(id: string, kind: 'mutex' | 'read' | 'write', path: string): Promise<void> {
    await this.command(id, `new ${kind} ${path}`, ['ok']);
  }

  /** Sends acquire; the promise resolves when Curator answers (true = acquired, false = still busy after ms). */
  acquire(id: string, ms: number): Promise<boolean> {
    return this.command(id, `acquire ${ms}`, ['acquired', 'busy']).then((a) => a === 'acquired');
  }

  /** n rounds of acquire / probe / release on the Java side; resolves the overlaps it saw (see CuratorLockTool.java). */
  hammer(id: string, rounds: number, probePath: string): Promise<number> {
    return this.command(id, `hammer ${rounds} ${probePath}`, [], /^hammered \d+$/, 120_000).then(
      (a) => Number(a.split(' ')[1]),
    );
  }

  async release(id: string): Promise<void> {
    await this.command(id, 'release', ['released']);
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await gone;
  }
}
