import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LineTool, oneOf } from './line-tool';

/** Debian's python3-kazoo is installed for Debian's interpreter (a pyenv python3 on PATH may not see it). */
export const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** A running Python process using kazoo's Lock and Election, driven over stdin/stdout (see kazoo_tool.py). */
export class KazooTool extends LineTool {
  static async start(connectionString: string, sessionTimeout = 5_000): Promise<KazooTool> {
    const child = spawn(PYTHON, [
      '-u',
      join(__dirname, 'kazoo_tool.py'),
      connectionString,
      String(sessionTimeout),
    ]);
    const tool = new KazooTool('kazoo tool', child);
    await tool.ready(30_000);
    return tool;
  }

  /** Declares kazoo Lock `id` on `path` (identifier = its node's data), with kazoo's extra_lock_patterns. */
  async lock(
    id: string,
    path: string,
    identifier: string,
    extraPatterns: string[] = [],
  ): Promise<void> {
    await this.command(id, ['lock', path, identifier, ...extraPatterns].join(' '), oneOf('ok'));
  }

  /** lock.acquire(timeout=seconds): 'acquired', or 'timeout' (kazoo raised LockTimeout). */
  acquire(id: string, seconds: number): Promise<'acquired' | 'timeout' | 'busy'> {
    return this.command(id, `acquire ${seconds}`, oneOf('acquired', 'timeout', 'busy')) as Promise<
      'acquired' | 'timeout' | 'busy'
    >;
  }

  async release(id: string): Promise<void> {
    await this.command(id, 'release', oneOf('released'));
  }

  /** kazoo's contenders(): the identifiers (node data) of the contenders it sees, in its order. */
  async contenders(id: string): Promise<string[]> {
    const a = await this.command(id, 'contenders', oneOf('contenders'));
    return JSON.parse(a.slice('contenders '.length)) as string[];
  }

  /** Starts kazoo Election `id` on `path`; leading() resolves when its leader function runs. */
  async elect(id: string, path: string, identifier: string): Promise<void> {
    await this.command(id, `elect ${path} ${identifier}`, oneOf('electing'));
  }

  leading(id: string, timeoutMs?: number): Promise<string> {
    return this.next((l) => l === `${id} leading`, timeoutMs);
  }

  /** true if `id leading` was printed and not yet consumed by leading(). */
  saidLeading(id: string): boolean {
    return this.lines.includes(`${id} leading`);
  }

  /** The leader function returns: kazoo releases the election's lock. */
  async resign(id: string): Promise<void> {
    await this.command(id, 'resign', oneOf('resigned'));
  }
}
