import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * Newline-delimited JSON request/response over TCP: the wire between workers and the harness's
 * fenced store, and between workers and the memory lock server. Requests carry an id; the answer
 * echoes it. Bigints travel as decimal strings (fencing tokens exceed 2^53 on some backends).
 */
export type JsonMessage = Record<string, unknown> & { id?: number };

function frame(message: JsonMessage): string {
  return `${JSON.stringify(message, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`;
}

/** Calls `onMessage` for every complete line received on `socket`. */
export function readLines(socket: Socket, onMessage: (message: JsonMessage) => void): void {
  let buffer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.length > 0) onMessage(JSON.parse(line) as JsonMessage);
    }
  });
}

export function send(socket: Socket, message: JsonMessage): void {
  if (!socket.destroyed) socket.write(frame(message));
}

/** A server that answers each request with `handler`'s result (or `{ error }`). */
export function serveJsonLines(
  port: number,
  handler: (
    request: JsonMessage,
    socket: Socket,
  ) => Promise<JsonMessage | undefined> | JsonMessage | undefined,
  onConnection?: (socket: Socket) => void,
): Promise<Server> {
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    onConnection?.(socket);
    readLines(socket, (request) => {
      Promise.resolve()
        .then(() => handler(request, socket))
        .then(
          (answer) => answer && send(socket, { ...answer, id: request.id }),
          (error: unknown) =>
            send(socket, { id: request.id, error: String((error as Error)?.message ?? error) }),
        );
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/**
 * The client side: one connection at a time, re-opened on the next call after it drops. A drop
 * rejects every call in flight (the caller cannot know whether the server acted on it).
 */
export class JsonLinesClient {
  private socket: Socket | undefined;
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (m: JsonMessage) => void; reject: (e: Error) => void }
  >();
  private readonly inFlight = new WeakMap<Socket, Set<number>>();
  private closed = false;

  constructor(
    private readonly port: number,
    private readonly host = '127.0.0.1',
  ) {}

  call(request: JsonMessage): { id: number; answer: Promise<JsonMessage> } {
    const id = this.nextId++;
    const answer = new Promise<JsonMessage>((resolve, reject) => {
      if (this.closed) return reject(new Error('client closed'));
      this.pending.set(id, { resolve, reject });
      const socket = this.connection();
      this.inFlight.get(socket)?.add(id);
      send(socket, { ...request, id });
    });
    return { id, answer };
  }

  /** Sends a message that gets no answer (e.g. cancel). */
  notify(message: JsonMessage): void {
    if (this.socket && !this.socket.destroyed) send(this.socket, message);
  }

  close(): void {
    this.closed = true;
    this.socket?.destroy();
  }

  private connection(): Socket {
    if (this.socket && !this.socket.destroyed) return this.socket;
    const socket = connect({ port: this.port, host: this.host });
    socket.setNoDelay(true);
    this.socket = socket;
    const ids = new Set<number>();
    this.inFlight.set(socket, ids);
    readLines(socket, (message) => {
      const entry = message.id === undefined ? undefined : this.pending.get(message.id);
      if (!entry) return;
      this.pending.delete(message.id as number);
      ids.delete(message.id as number);
      if (typeof message.error === 'string') entry.reject(new Error(message.error));
      else entry.resolve(message);
    });
    const drop = (error?: Error) => {
      if (this.socket === socket) this.socket = undefined;
      socket.destroy();
      // Only the calls sent on this socket fail; a newer connection's calls are unaffected.
      for (const id of ids) {
        const p = this.pending.get(id);
        this.pending.delete(id);
        p?.reject(error ?? new Error(`connection to 127.0.0.1:${this.port} closed`));
      }
      ids.clear();
    };
    socket.on('error', drop);
    socket.on('close', () => drop());
    return socket;
  }
}
