import { compileJava, LineTool, spawnCurator } from './line-tool';

/** Compiles CuratorSemaphoreTool.java with javac into a temp dir; returns the class dir. */
export function compileCuratorSemaphoreTool(): string {
  return compileJava('CuratorSemaphoreTool');
}

/** A Java process holding Curator InterProcessSemaphoreV2 leases, driven over stdin/stdout. */
export class CuratorSemaphoreTool extends LineTool {
  static async start(classes: string, connectionString: string): Promise<CuratorSemaphoreTool> {
    const tool = new CuratorSemaphoreTool(
      'Curator tool',
      spawnCurator(classes, 'CuratorSemaphoreTool', connectionString, 5_000),
    );
    await tool.ready(60_000);
    return tool;
  }

  /** Declares semaphore instance `id`: InterProcessSemaphoreV2(client, path, maxLeases). */
  async semaphore(id: string, path: string, maxLeases: number): Promise<void> {
    await this.command(id, `new ${path} ${maxLeases}`);
  }

  /** Curator's acquire(ms): the lease's node name, or null when none was free within ms. */
  async acquire(id: string, ms: number): Promise<string | null> {
    const got = await this.command(id, `acquire ${ms}`, undefined, ms + 30_000);
    return got === 'busy' ? null : got.replace(/^acquired /, '');
  }

  async release(id: string): Promise<void> {
    await this.command(id, 'release');
  }

  /** n rounds of acquire / count probeDir's children / hold / return; resolves the most this id saw inside. */
  async hammer(id: string, rounds: number, probeDir: string, holdMs: number): Promise<number> {
    const got = await this.command(
      id,
      `hammer ${rounds} ${probeDir} ${holdMs}`,
      undefined,
      180_000,
    );
    return Number(got.replace(/^hammered /, ''));
  }
}
