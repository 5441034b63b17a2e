import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { tempDir } from '../support/server-process';

/** Debian's libcurator-recipes-java; its manifest pulls in curator-framework/client, zookeeper, guava. */
const CLASSPATH = ['/usr/share/java/curator-recipes.jar', '/usr/share/java/slf4j-nop.jar'];

/** Compiles CuratorSemaphoreTool.java with javac into a temp dir; returns the class dir. */
export function compileCuratorSemaphoreTool(): string {
  const out = tempDir('curator-sem');
  execFileSync(
    'javac',
    [
      '-cp',
      CLASSPATH.join(':'),
      '-d',
      out,
      join(__dirname, 'curator', 'CuratorSemaphoreTool.java'),
    ],
    { stdio: 'pipe' },
  );
  return out;
}

/** A Java process holding Curator InterProcessSemaphoreV2 leases, driven over stdin/stdout. */
export class CuratorSemaphoreTool {
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

  static async start(classes: string, connectionString: string): Promise<CuratorSemaphoreTool> {
    const child = spawn('java', [
      '-Xmx96m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-cp',
      [classes, ...CLASSPATH].join(':'),
      'CuratorSemaphoreTool',
      connectionString,
      '5000',
    ]);
    const tool = new CuratorSemaphoreTool(child);
    await tool.next((l) => l === 'ready', 60_000);
    return tool;
  }

  private next(match: (line: string) => boolean, timeoutMs: number): Promise<string> {
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

  /** Sends `<id> <line>` and resolves the answer after the id (rejects on `<id> error ...`). */
  private async command(id: string, line: string, timeoutMs = 30_000): Promise<string> {
    const reply = this.next((l) => l.startsWith(`${id} `), timeoutMs);
    this.child.stdin.write(`${id} ${line}\n`);
    const got = (await reply).slice(id.length + 1);
    if (got.startsWith('error')) throw new Error(`Curator tool: ${id} ${got}`);
    return got;
  }

  /** Declares semaphore instance `id`: InterProcessSemaphoreV2(client, path, maxLeases). */
  async semaphore(id: string, path: string, maxLeases: number): Promise<void> {
    await this.command(id, `new ${path} ${maxLeases}`);
  }

  /** Curator's acquire(ms): the lease's node name, or null when none was free within ms. */
  async acquire(id: string, ms: number): Promise<string | null> {
    const got = await this.command(id, `acquire ${ms}`, ms + 30_000);
    return got === 'busy' ? null : got.replace(/^acquired /, '');
  }

  async release(id: string): Promise<void> {
    await this.command(id, 'release');
  }

  /** n rounds of acquire / count probeDir's children / hold / return; resolves the most this id saw inside. */
  async hammer(id: string, rounds: number, probeDir: string, holdMs: number): Promise<number> {
    const got = await this.command(id, `hammer ${rounds} ${probeDir} ${holdMs}`, 180_000);
    return Number(got.replace(/^hammered /, ''));
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await gone;
  }
}
