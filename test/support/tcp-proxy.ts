import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy for fault injection between clients and a server. Each proxy forwards to one
 * target; tests put one in front of every server a process talks to and then:
 * - blackhole(): hold every byte in both directions, on open and on new connections, until heal(),
 *   like a network partition (TCP would retransmit; nothing is lost, it arrives late or never).
 *   Held bytes wait in the proxy's memory (fine for lock traffic), so `held` can be observed.
 * - delay: add ms of latency to every chunk, both directions (order preserved).
 * - resetAll(): destroy every connection at once, like a partition long enough for TCP to give up.
 * Bytes are held, never dropped: dropping bytes from the middle of a live stream is not something a
 * network does, and would only test the client's protocol parser.
 */
export interface ProxyTarget {
  host?: string;
  port: number;
}

interface Direction {
  from: Socket;
  to: Socket;
  queue: { chunk: Buffer | null; due: number }[];
  timer: NodeJS.Timeout | undefined;
}

export class TcpProxy {
  /** Extra latency in ms per chunk (both directions). */
  delay = 0;
  private holding = false;
  private readonly directions = new Set<Direction>();
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server, readonly target: Required<ProxyTarget>) {}

  /** Starts a proxy to `target` on a free loopback port (or `listenPort`). */
  static start(target: ProxyTarget, listenPort = 0): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server, { host: target.host ?? '127.0.0.1', port: target.port });
    server.on('connection', (client) => proxy.accept(client));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve(proxy));
    });
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  get blackholed(): boolean {
    return this.holding;
  }

  /** Open proxied connections. */
  get connections(): number {
    return this.directions.size / 2;
  }

  /** Bytes read from one side and not yet delivered to the other. */
  get held(): number {
    let n = 0;
    for (const d of this.directions) for (const q of d.queue) n += q.chunk?.length ?? 0;
    return n;
  }

  blackhole(): void {
    this.holding = true;
  }

  heal(): void {
    this.holding = false;
    for (const d of this.directions) this.flush(d);
  }

  resetAll(): void {
    for (const s of this.sockets) s.resetAndDestroy();
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    const upstream = connect({ host: this.target.host, port: this.target.port });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.sockets.add(client);
    this.sockets.add(upstream);
    const up = this.direction(client, upstream);
    const down = this.direction(upstream, client);
    const teardown = () => {
      for (const d of [up, down]) {
        if (d.timer) clearTimeout(d.timer);
        this.directions.delete(d);
      }
      for (const s of [client, upstream]) {
        this.sockets.delete(s);
        s.destroy();
      }
    };
    for (const s of [client, upstream]) {
      s.on('error', teardown);
      s.on('close', teardown);
    }
  }

  private direction(from: Socket, to: Socket): Direction {
    const d: Direction = { from, to, queue: [], timer: undefined };
    this.directions.add(d);
    from.on('data', (chunk: Buffer) => {
      d.queue.push({ chunk, due: Date.now() + this.delay });
      this.flush(d);
    });
    from.on('end', () => {
      d.queue.push({ chunk: null, due: Date.now() + this.delay });
      this.flush(d);
    });
    return d;
  }

  /** Delivers every due chunk in order, unless holding; re-arms for the next one. */
  private flush(d: Direction): void {
    if (d.timer) clearTimeout(d.timer);
    d.timer = undefined;
    if (this.holding) return;
    const now = Date.now();
    while (d.queue.length > 0 && d.queue[0].due <= now) {
      const { chunk } = d.queue.shift() as { chunk: Buffer | null };
      if (d.to.destroyed) return;
      if (chunk === null) d.to.end();
      else d.to.write(chunk);
    }
    if (d.queue.length > 0) d.timer = setTimeout(() => this.flush(d), d.queue[0].due - now);
  }
}
