import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, openSync, closeSync, readFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Private, throwaway server processes for tests: free loopback ports, a temp dir each, and fault
 * injection (kill, SIGSTOP/SIGCONT, restart). Never touches the machine's own services.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Several distinct free ports at once (held open until all are chosen, so none repeats). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const srv = createServer();
          srv.on('error', reject);
          srv.listen(0, '127.0.0.1', () => resolve(srv));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/**
 * Free ports for `n` Redis Cluster nodes: their client ports and their bus ports, all distinct and
 * chosen at once. Redis's default bus port is the client port + 10000, which nobody checked was
 * free (another test's server held one once) and which passes 65535 for a client port above
 * 55535; the nodes get `--cluster-port` instead.
 */
export async function clusterPorts(n: number): Promise<[number[], number[]]> {
  const ports = await freePorts(2 * n);
  return [ports.slice(0, n), ports.slice(n)];
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `ndl-${prefix}-`));
}

/** Resolves once `host:port` accepts a TCP connection; rejects after `timeoutMs`. */
export async function waitForPort(
  port: number,
  timeoutMs = 20_000,
  host = '127.0.0.1',
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = connect({ port, host });
      sock.once('connect', () => {
        sock.destroy();
        resolve(true);
      });
      sock.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until)
      throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface ServerProcessOptions {
  /** Label for logs and errors. */
  name: string;
  command: string;
  args: string[];
  /** Port that must accept connections before start() resolves. */
  port: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Log file; default <dir>/<name>.log. */
  logFile?: string;
  startTimeoutMs?: number;
  /** Extra readiness check after the port opens. */
  ready?: () => Promise<void>;
}

/** One server process with fault injection. start() again after kill() restarts it on the same port. */
export class ServerProcess {
  child: ChildProcess | undefined;
  readonly logFile: string;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly options: ServerProcessOptions,
    readonly dir: string,
  ) {
    this.logFile = options.logFile ?? join(dir, `${options.name}.log`);
  }

  get port(): number {
    return this.options.port;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    const fd = openSync(this.logFile, 'a');
    const child = spawn(this.options.command, this.options.args, {
      cwd: this.options.cwd ?? this.dir,
      env: { ...process.env, ...this.options.env },
      stdio: ['ignore', fd, fd],
      detached: false,
    });
    closeSync(fd);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const failed = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) =>
        reject(
          new Error(
            `${this.options.name} exited (${code ?? signal}) while starting; log:\n${this.tail()}`,
          ),
        ),
      ),
    );
    failed.catch(() => undefined);
    try {
      await Promise.race([waitForPort(this.port, this.options.startTimeoutMs ?? 30_000), failed]);
      if (this.options.ready) await Promise.race([this.options.ready(), failed]);
    } catch (error) {
      await this.kill();
      throw error instanceof Error && error.message.includes('log:')
        ? error
        : new Error(
            `${this.options.name} did not start: ${(error as Error).message}; log:\n${this.tail()}`,
          );
    }
  }

  /** SIGKILL (default) or another signal; resolves when the process has exited. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.running) return;
    this.child?.kill('SIGCONT');
    this.child?.kill(signal);
    await this.exited;
  }

  /** Graceful stop (SIGTERM, then SIGKILL after 5 s). */
  async stop(): Promise<void> {
    if (!this.running) return;
    const t = setTimeout(() => this.child?.kill('SIGKILL'), 5_000);
    await this.kill('SIGTERM');
    clearTimeout(t);
  }

  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  tail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
