import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { tempDir } from '../support/server-process';

/** Debian's libcurator-recipes-java; its manifest pulls in curator-framework/client, zookeeper, guava. */
const CURATOR_CLASSPATH = ['/usr/share/java/curator-recipes.jar', '/usr/share/java/slf4j-nop.jar'];
const CURATOR_SOURCES = join(__dirname, 'curator');

/**
 * Compiles test/zookeeper/curator/<tool>.java, with the CuratorLineTool base it extends, with javac
 * into a temp dir (once per test file); returns the class dir for startCurator.
 */
export function compileJava(tool: string): string {
  const out = tempDir(`curator-${tool}`);
  const sources = ['CuratorLineTool', tool].map((name) => join(CURATOR_SOURCES, `${name}.java`));
  execFileSync('javac', ['-cp', CURATOR_CLASSPATH.join(':'), '-d', out, ...sources], {
    stdio: 'pipe',
  });
  return out;
}

/** Starts the compiled Curator tool `tool` (a small, quick-starting JVM) against `connectionString`. */
export function spawnCurator(
  classes: string,
  tool: string,
  connectionString: string,
  sessionTimeout: number,
): ChildProcessWithoutNullStreams {
  return spawn('java', [
    '-Xmx96m',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-cp',
    [classes, ...CURATOR_CLASSPATH].join(':'),
    tool,
    connectionString,
    String(sessionTimeout),
  ]);
}

/**
 * A child process driven over stdin/stdout by the tools' line protocol: it prints `ready`, then
 * answers each `<id> <command> <args...>` line with `<id> <answer>`, or `<id> error <what>` when
 * the command failed; answers of different ids may come in any order, and a tool may print lines
 * of its own (a leader callback). Lines nobody waits for yet are kept for a later next().
 * Subclasses add only their commands.
 */
export class LineTool {
  /** Lines printed so far and not yet consumed by next(). */
  protected readonly lines: string[] = [];
  private readonly waiters: { match: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  private exited = false;
  stderr = '';

  protected constructor(
    /** Names the tool in error messages. */
    private readonly label: string,
    private readonly child: ChildProcessWithoutNullStreams,
  ) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const i = this.waiters.findIndex((w) => w.match(line));
      if (i >= 0) this.waiters.splice(i, 1)[0].resolve(line);
      else this.lines.push(line);
    });
    child.stderr.on('data', (d) => (this.stderr += d.toString()));
    child.on('exit', () => (this.exited = true));
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
            `${this.label}: no matching line after ${timeoutMs} ms (exited: ${this.exited}); stderr:\n${this.stderr}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await gone;
  }

  /** Waits for the tool's `ready` line (connected to ZooKeeper). */
  protected async ready(timeoutMs: number): Promise<void> {
    await this.next((l) => l === 'ready', timeoutMs);
  }

  /**
   * Sends `<id> <line>` and resolves the first answer of `id` that `accept` takes (the text after
   * the id); rejects when the answer is `error ...`.
   */
  protected async command(
    id: string,
    line: string,
    accept: (answer: string) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<string> {
    const reply = this.next((l) => {
      if (!l.startsWith(`${id} `)) return false;
      const answer = l.slice(id.length + 1);
      return answer.startsWith('error') || accept(answer);
    }, timeoutMs);
    this.child.stdin.write(`${id} ${line}\n`);
    const answer = (await reply).slice(id.length + 1);
    if (answer.startsWith('error')) throw new Error(`${this.label}: ${id} ${answer}`);
    return answer;
  }
}

/** An accept for command(): one of these answers, alone or followed by a space and more. */
export function oneOf(...answers: string[]): (answer: string) => boolean {
  return (a) => answers.some((x) => a === x || a.startsWith(`${x} `));
}
