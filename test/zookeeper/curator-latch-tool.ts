import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { tempDir } from '../support/server-process';

/** Debian's libcurator-recipes-java; its manifest pulls in curator-framework/client, zookeeper, guava. */
const CLASSPATH = ['/usr/share/java/curator-recipes.jar', '/usr/share/java/slf4j-nop.jar'];

/** Compiles CuratorLatchTool.java with javac into a temp dir; returns the class dir. */
export function compileCuratorLatchTool(): string {
  const out = tempDir('curator-latch');
  execFileSync(
    'javac',
    ['-cp', CLASSPATH.join(':'), '-d', out, join(__dirname, 'curator', 'CuratorLatchTool.java')],
    { stdio: 'pipe' },
  );
  return out;
}

/** A running Java process with Curator LeaderLatch participants, driven over stdin/stdout (see CuratorLatchTool.java). */
export class CuratorLatchTool {
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
  ): Promise<CuratorLatchTool> {
    const child = spawn('java', [
      '-Xmx96m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-cp',
      [classes, ...CLASSPATH].join(':'),
      'CuratorLatchTool',
      connectionString,
      String(sessionTimeout),
    ]);
    const tool = new CuratorLatchTool(child);
    await tool.next((l) => l === 'ready', 60_000);
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
            `Curator latch tool: no matching line after ${timeoutMs} ms (exited: ${this.exited}); stderr:\n${this.stderr}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Lines printed so far and not yet consumed by next(). */
  pending(): readonly string[] {
    return this.lines;
  }

  private async command(id: string, line: string, answer: string): Promise<string> {
    const reply = this.next((l) => l.startsWith(`${id} ${answer}`) || l.startsWith(`${id} error`));
    this.child.stdin.write(`${id} ${line}\n`);
    const got = await reply;
    if (got.startsWith(`${id} error`)) throw new Error(`Curator latch tool: ${got}`);
    return got.slice(id.length + answer.length + 2);
  }

  /** Starts LeaderLatch `id` on `path` with participant id `participant` (no spaces). */
  async start(id: string, path: string, participant: string): Promise<void> {
    await this.command(id, `start ${path} ${participant}`, 'started');
  }

  /** Resolves when Curator's listener says `id` leads (isLeader), however long ago it said so. */
  isLeader(id: string, timeoutMs?: number): Promise<string> {
    return this.next((l) => l === `${id} isLeader`, timeoutMs);
  }

  async hasLeadership(id: string): Promise<boolean> {
    return (await this.command(id, 'has', 'has')) === 'true';
  }

  /** getLeader(): the leading participant's id and isLeader flag. */
  async leader(id: string): Promise<{ id: string; isLeader: boolean }> {
    const [pid, flag] = (await this.command(id, 'leader', 'leader')).split('|');
    return { id: pid, isLeader: flag === 'true' };
  }

  async participants(id: string): Promise<number> {
    return Number(await this.command(id, 'participants', 'participants'));
  }

  async close(id: string): Promise<void> {
    await this.command(id, 'close', 'closed');
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await gone;
  }
}
