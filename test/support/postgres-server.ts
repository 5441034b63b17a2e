import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, removeDir, ServerProcess, tempDir } from './server-process';

const run = promisify(execFile);
/** Debian's newest installed PostgreSQL server (/usr/lib/postgresql/<major>/bin). */
function binDir(): string {
  const majors = readdirSync('/usr/lib/postgresql')
    .filter((v) => existsSync(join('/usr/lib/postgresql', v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  if (majors.length === 0)
    throw new Error('no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql)');
  return join('/usr/lib/postgresql', majors[0], 'bin');
}
const PG_USER = 'postgres';

/**
 * A private PostgreSQL cluster (Debian's newest installed major; initdb into a temp dir) on a free
 * loopback port, its socket in that dir; never the machine's own cluster on 5432. initdb and
 * postgres refuse to run as root, so as root both run as the `postgres` OS user through setpriv,
 * which exec()s: the child we signal IS the postmaster (kill reaches it directly; pause/resume also
 * stop its backend processes). Trust auth on loopback, fsync off (a killed postmaster loses
 * nothing: the kernel keeps the written pages).
 */
export class PostgresServer extends ServerProcess {
  static async start(): Promise<PostgresServer> {
    const dir = tempDir('postgres');
    if (isRoot()) {
      const uid = Number((await run('id', ['-u', PG_USER])).stdout.trim());
      const gid = Number((await run('id', ['-g', PG_USER])).stdout.trim());
      chownSync(dir, uid, gid);
    }
    const data = join(dir, 'data');
    const bin = binDir();
    const initdb = asPostgres(join(bin, 'initdb'));
    await run(
      initdb[0],
      [
        ...initdb.slice(1),
        '-D',
        data,
        '-A',
        'trust',
        '-U',
        'postgres',
        '--no-sync',
        '-E',
        'UTF8',
        '--locale=C',
      ],
      { cwd: dir },
    );
    const port = await freePort();
    const postgres = asPostgres(join(bin, 'postgres'));
    const server = new PostgresServer(
      {
        name: `postgres-${port}`,
        command: postgres[0],
        args: [
          ...postgres.slice(1),
          '-D',
          data,
          '-p',
          String(port),
          '-k',
          dir,
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          'fsync=off',
          '-c',
          'max_connections=300',
          '-c',
          'shared_buffers=32MB',
        ],
        port,
        startTimeoutMs: 60_000,
        // The port opens before the server accepts sessions ("the database system is starting up").
        ready: () => acceptsSessions(port, 60_000),
      },
      dir,
    );
    await server.start();
    return server;
  }

  /** Connection options for pg (database `postgres`). */
  get connection() {
    return { host: '127.0.0.1', port: this.port, user: 'postgres', database: 'postgres' };
  }

  /** Runs SQL through psql (admin work in tests); resolves stdout (unaligned, tuples only). */
  async sql(statement: string): Promise<string> {
    const { stdout } = await run('psql', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-AtX',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      statement,
    ]);
    return stdout.trim();
  }

  /** Immediate shutdown (SIGQUIT): the postmaster kills its backends at once, like a crash; start() recovers. */
  async crash(): Promise<void> {
    await this.kill('SIGQUIT');
  }

  /** Freezes the whole server: the postmaster first (no new backends), then every child process. */
  override pause(): void {
    super.pause();
    for (const pid of this.children()) signal(pid, 'SIGSTOP');
  }

  override resume(): void {
    for (const pid of this.children()) signal(pid, 'SIGCONT');
    super.resume();
  }

  private children(): number[] {
    const pid = this.child?.pid;
    if (!pid || !this.running) return [];
    const out = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
    return out
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
  }

  async destroy(): Promise<void> {
    await this.kill('SIGQUIT');
    removeDir(this.dir);
  }
}

/** Resolves once psql can run a query on `port` (rejects after `timeoutMs`). */
async function acceptsSessions(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      await run('psql', [
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        PG_USER,
        '-d',
        'postgres',
        '-AtX',
        '-c',
        'SELECT 1',
      ]);
      return;
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // the child exited meanwhile
  }
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** The command line that runs `program` as the postgres OS user when we are root (else as ourselves). */
function asPostgres(program: string): string[] {
  return isRoot()
    ? ['setpriv', `--reuid=${PG_USER}`, `--regid=${PG_USER}`, '--init-groups', '--', program]
    : [program];
}
