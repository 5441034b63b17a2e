import { createServer, type Server, type Socket } from 'node:net';

/**
 * The "system" behind the example backend: a toy lock server speaking newline-delimited JSON on a
 * loopback port. One event loop makes every request an atomic check-and-set. Requests:
 * `{ id, op: 'acquire' | 'renew' | 'release', key, owner, ttl }`; replies `{ id, ok, token?,
 * retryAfter? }`; when a key is freed it pushes `{ event: 'released', key }` to every connection.
 * Fencing tokens come from a per-key counter that survives releases and restarts of the listener.
 */
export class ToyLockServer {
  private readonly locks = new Map<string, { owner: string; expiresAt: number }>();
  private readonly fences = new Map<string, number>();
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  port = 0;

  static async start(): Promise<ToyLockServer> {
    const toy = new ToyLockServer();
    await toy.listen();
    return toy;
  }

  /** Listens again on the same port after stop() (the clients' reconnect target). */
  async listen(): Promise<void> {
    const server = createServer((socket) => this.serve(socket));
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** An outage: stops listening and cuts every connection (the locks stay in memory). */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** An operator deleting a lock behind its holder's back. */
  forceDelete(key: string): void {
    this.free(key);
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = '';
    socket.on('data', (chunk) => {
      const lines = (buffered + chunk.toString()).split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) socket.write(`${JSON.stringify(this.handle(JSON.parse(line)))}\n`);
    });
  }

  private handle(r: { id: number; op: string; key: string; owner: string; ttl: number }) {
    const now = Date.now();
    const held = this.locks.get(r.key);
    const live = held && held.expiresAt > now ? held : undefined;
    const ours = live?.owner === r.owner;
    if (r.op === 'acquire') {
      if (live && !ours) return { id: r.id, ok: false, retryAfter: live.expiresAt - now };
      const token = (this.fences.get(r.key) ?? 0) + 1;
      this.fences.set(r.key, token);
      this.locks.set(r.key, { owner: r.owner, expiresAt: now + r.ttl });
      return { id: r.id, ok: true, token: String(token) };
    }
    if (r.op === 'renew' && ours) live.expiresAt = now + r.ttl;
    if (r.op === 'release' && ours) this.free(r.key);
    return { id: r.id, ok: ours };
  }

  private free(key: string): void {
    if (!this.locks.delete(key)) return;
    const event = `${JSON.stringify({ event: 'released', key })}\n`;
    for (const socket of this.sockets) socket.write(event);
  }
}
