import { compileJava, LineTool, oneOf, spawnCurator } from './line-tool';

/** Compiles CuratorLockTool.java with javac into a temp dir (once per test file); returns the class dir. */
export function compileCuratorTool(): string {
  return compileJava('CuratorLockTool');
}

/** A running Java process holding Curator locks, driven over stdin/stdout (see CuratorLockTool.java). */
export class CuratorTool extends LineTool {
  static async start(
    classes: string,
    connectionString: string,
    sessionTimeout = 5_000,
  ): Promise<CuratorTool> {
    const tool = new CuratorTool(
      'Curator tool',
      spawnCurator(classes, 'CuratorLockTool', connectionString, sessionTimeout),
    );
    await tool.ready(60_000);
    return tool;
  }

  /** Declares a lock `id`: an InterProcessMutex, or the read/write half of an InterProcessReadWriteLock, on `path`. */
  async lock(id: string, kind: 'mutex' | 'read' | 'write', path: string): Promise<void> {
    await this.command(id, `new ${kind} ${path}`, oneOf('ok'));
  }

  /** Sends acquire; the promise resolves when Curator answers (true = acquired, false = still busy after ms). */
  acquire(id: string, ms: number): Promise<boolean> {
    return this.command(id, `acquire ${ms}`, oneOf('acquired', 'busy')).then(
      (a) => a === 'acquired',
    );
  }

  /** n rounds of acquire / probe / release on the Java side; resolves the overlaps it saw (see CuratorLockTool.java). */
  hammer(id: string, rounds: number, probePath: string): Promise<number> {
    return this.command(id, `hammer ${rounds} ${probePath}`, oneOf('hammered'), 120_000).then((a) =>
      Number(a.split(' ')[1]),
    );
  }

  async release(id: string): Promise<void> {
    await this.command(id, 'release', oneOf('released'));
  }
}
