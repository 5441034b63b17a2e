import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * The loopback TCP proxy for fault injection between clients and servers (the one proxy of the test
 * suites). Each proxy forwards to one target, or round-robin over several (a client given one
 * address for a cluster: a dead member closes at once and the client retries through us). Tests put
 * one in front of every server a process talks to and then:
 * - blackhole(): hold every byte in both directions, on open and on new connections, until heal(),
 *   like a network partition or a hung peer (TCP would retransmit; nothing is lost, it arrives late
 *   or never). blackhole('replies') holds only the servers' answers: requests still arrive and are
 *   applied, their responses wait (a lost response, once the connection drops).
 *   Held bytes wait in the proxy's memory (fine for lock traffic), so `held` can be observed.
 * - delay: add ms of latency to every chunk, both directions; jitter: add up to that many ms more,
 *   drawn per chunk from `random` (seed it for a reproducible draw). Order within a connection is
 *   kept (a TCP stream never reorders), so jitter reorders chunks ACROSS connections: of one client's
 *   pool, and, with different delays per proxy, between clients.
 * - resetAll(): reset (RST) every connection at once, like a partition long enough for TCP to give
 *   up; new connections are accepted.
 * - drop(): close every connection and refuse new ones until heal() (the server seems gone).
 * Bytes are held, never dropped: dropping bytes from the middle of a live stream is not something a
 * network does, and would only test the client's protocol parser.
 */
/**
 * Resets (RST) `socket`, or closes it when its shutdown (FIN) is under way: libuv refuses a reset
 * then (EINVAL), and Node never closes that socket's handle, so the process could never exit.
 */
export function resetOrClose(socket: Socket): void {
  if (socket.writableEnded) socket.destroy();
  else socket.resetAndDestroy();
}

export interface ProxyTarget {
  host?: string;
  port: number;
}

interface Direction {
  /** server -> client */
  reply: boolean;
  from: Socket;
  to: Socket;
  queue: { chunk: Buffer | null; due: number }[];
  timer: NodeJS.Timeout | undefined;
  /** The latest due time queued: a later chunk is never due before it. */
  lastDue: number;
}

export class TcpProxy {
  /** Extra latency in ms per chunk (both directions). */
  delay = 0;
  /** Up to this many ms more per chunk, uniform from `random` (reorders across connections). */
  jitter = 0;
  /** Source of the jitter draw, in [0, 1). */
  random: () => number = Math.random;
  private holding: 'none' | 'both' | 'replies' = 'none';
  private refusing = false;
  private next = 0;
  private readonly directions = new Set<Direction>();
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly targets: Required<ProxyTarget>[],
  ) {}

  /** Starts a proxy to `target` (round-robin over several) on a free port (or `listenPort`). */
  static start(target: ProxyTarget | ProxyTarget[], listenPort = 0): Promise<TcpProxy> {
    const list = (Array.isArray(target) ? target : [target]).map((t) => ({
      host: t.host ?? '127.0.0.1',
      port: t.port,
    }));
    if (list.length === 0) return Promise.reject(new Error('TcpProxy.start: no target'));
    const server = createServer();
    const proxy = new TcpProxy(server, list);
    server.on('connection', (client) => proxy.accept(client));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve(proxy));
    });
  }

  /** The first (or only) target. */
  get target(): Required<ProxyTarget> {
    return this.targets[0];
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** `host:port` of the proxy, the form ZooKeeper's and etcd's clients take. */
  get connectionString(): string {
    return `127.0.0.1:${this.port}`;
  }

  get blackholed(): boolean {
    return this.holding !== 'none';
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

  /** Holds bytes until heal(): in both directions, or only the servers' replies. */
  blackhole(which: 'both' | 'replies' = 'both'): void {
    this.holding = which;
  }

  /** Undoes blackhole() and drop(): held bytes flow, new connections are accepted. */
  heal(): void {
    this.holding = 'none';
    this.refusing = false;
    for (const d of this.directions) this.flush(d);
  }

  resetAll(): void {
    for (const s of this.sockets) resetOrClose(s);
  }

  /** Closes every connection (held bytes die with it) and refuses new ones until heal(). */
  drop(): void {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.refusing) return void client.destroy();
    const target = this.targets[this.next++ % this.targets.length];
    const upstream = connect({ host: target.host, port: target.port });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.sockets.add(client);
    this.sockets.add(upstream);
    const up = this.direction(client, upstream, false);
    const down = this.direction(upstream, client, true);
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

  private direction(from: Socket, to: Socket, reply: boolean): Direction {
    const d: Direction = { reply, from, to, queue: [], timer: undefined, lastDue: 0 };
    this.directions.add(d);
    const due = () => {
      const extra = this.jitter > 0 ? this.random() * this.jitter : 0;
      d.lastDue = Math.max(d.lastDue, Date.now() + this.delay + extra);
      return d.lastDue;
    };
    from.on('data', (chunk: Buffer) => {
      d.queue.push({ chunk, due: due() });
      this.flush(d);
    });
    from.on('end', () => {
      d.queue.push({ chunk: null, due: due() });
      this.flush(d);
    });
    return d;
  }

  /** Delivers every due chunk in order, unless holding; re-arms for the next one. */
  private flush(d: Direction): void {
    if (d.timer) clearTimeout(d.timer);
    d.timer = undefined;
    if (this.holding === 'both' || (this.holding === 'replies' && d.reply)) return;
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
