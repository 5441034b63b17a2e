import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, removeDir, ServerProcess, tempDir } from './server-process';

const run = promisify(execFile);

/**
 * A private MariaDB server (Debian's mariadb-server 10.11) on a free loopback port with its own
 * data dir, socket, pid file and temporary files in a temp dir (not the shared /tmp, where one
 * bootstrap once lost its temporary table beside others); never the machine's own server on 3306. root has no
 * password and may connect over 127.0.0.1 only. innodb_flush_log_at_trx_commit=2 writes the log at
 * every commit (survives a SIGKILL of mariadbd, not a power cut) and keeps the tests fast.
 */
export class MariaDbServer extends ServerProcess {
  static async start(): Promise<MariaDbServer> {
    const dir = tempDir('mariadb');
    const datadir = join(dir, 'data');
    // As root, mariadbd must be told to stay root (it would switch to the mysql user otherwise).
    const asRoot =
      typeof process.getuid === 'function' && process.getuid() === 0 ? ['--user=root'] : [];
    await run(
      'mariadb-install-db',
      [
        '--no-defaults',
        `--datadir=${datadir}`,
        '--auth-root-authentication-method=normal',
        ...asRoot,
        '--skip-test-db',
        `--tmpdir=${dir}`,
      ],
      {
        cwd: dir,
      },
    );
    const port = await freePort();
    const server = new MariaDbServer(
      {
        name: `mariadb-${port}`,
        command: 'mariadbd',
        args: [
          '--no-defaults',
          `--datadir=${datadir}`,
          `--port=${port}`,
          '--bind-address=127.0.0.1',
          `--socket=${join(dir, 'sock')}`,
          `--pid-file=${join(dir, 'mariadbd.pid')}`,
          `--tmpdir=${dir}`,
          ...asRoot,
          '--skip-name-resolve',
          '--skip-log-bin',
          '--innodb-buffer-pool-size=32M',
          '--innodb-flush-log-at-trx-commit=2',
          '--max-connections=500',
          '--log-error=' + join(dir, 'error.log'),
        ],
        port,
        startTimeoutMs: 60_000,
      },
      dir,
    );
    await server.start();
    await server.sql('CREATE DATABASE IF NOT EXISTS locks');
    return server;
  }

  /** Connection options for mysql2 (database `locks`). */
  get connection() {
    return { host: '127.0.0.1', port: this.port, user: 'root', password: '', database: 'locks' };
  }

  /** Runs SQL through the mariadb command-line client (admin work in tests); resolves stdout (tab-separated, no headers). */
  async sql(statement: string): Promise<string> {
    const { stdout } = await run('mariadb', [
      '--no-defaults',
      '-h',
      '127.0.0.1',
      '-P',
      String(this.port),
      '-u',
      'root',
      '-N',
      '-B',
      '-e',
      statement,
    ]);
    return stdout.trim();
  }

  async destroy(): Promise<void> {
    await this.kill();
    removeDir(this.dir);
  }
}
