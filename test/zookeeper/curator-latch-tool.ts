import { compileJava, LineTool, oneOf, spawnCurator } from './line-tool';

/** Compiles CuratorLatchTool.java with javac into a temp dir; returns the class dir. */
export function compileCuratorLatchTool(): string {
  return compileJava('CuratorLatchTool');
}

/** A running Java process with Curator LeaderLatch participants, driven over stdin/stdout (see CuratorLatchTool.java). */
export class CuratorLatchTool extends LineTool {
  static async start(
    classes: string,
    connectionString: string,
    sessionTimeout = 5_000,
  ): Promise<CuratorLatchTool> {
    const tool = new CuratorLatchTool(
      'Curator latch tool',
      spawnCurator(classes, 'CuratorLatchTool', connectionString, sessionTimeout),
    );
    await tool.ready(60_000);
    return tool;
  }

  /** Lines printed so far and not yet consumed by next(). */
  pending(): readonly string[] {
    return this.lines;
  }

  /** Starts LeaderLatch `id` on `path` with participant id `participant` (no spaces). */
  async start(id: string, path: string, participant: string): Promise<void> {
    await this.query(id, `start ${path} ${participant}`, 'started');
  }

  /** Resolves when Curator's listener says `id` leads (isLeader), however long ago it said so. */
  isLeader(id: string, timeoutMs?: number): Promise<string> {
    return this.next((l) => l === `${id} isLeader`, timeoutMs);
  }

  async hasLeadership(id: string): Promise<boolean> {
    return (await this.query(id, 'has', 'has')) === 'true';
  }

  /** getLeader(): the leading participant's id and isLeader flag. */
  async leader(id: string): Promise<{ id: string; isLeader: boolean }> {
    const [pid, flag] = (await this.query(id, 'leader', 'leader')).split('|');
    return { id: pid, isLeader: flag === 'true' };
  }

  async participants(id: string): Promise<number> {
    return Number(await this.query(id, 'participants', 'participants'));
  }

  async close(id: string): Promise<void> {
    await this.query(id, 'close', 'closed');
  }

  /** Sends a command answered `<id> <answer> <value>`; resolves the value. */
  private async query(id: string, line: string, answer: string): Promise<string> {
    return (await this.command(id, line, oneOf(answer))).slice(answer.length + 1);
  }
}
