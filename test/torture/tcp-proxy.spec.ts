import { connect, createServer, type Server, type Socket } from 'node:net';
import { eventually } from '../support/eventually';
import { TcpProxy } from '../support/tcp-proxy';

/** The nemesis's network faults, checked against a real echo server on loopback. */
describe('TcpProxy', () => {
  let echo: Server;
  let echoed = '';
  let proxy: TcpProxy;
  const clients: Socket[] = [];

  beforeAll(async () => {
    echo = createServer((s) => {
      s.on('error', () => undefined); // resetAll() resets the proxy's upstream sockets too
      s.on('data', (d) => (echoed += d.toString()));
      s.pipe(s);
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  });

  beforeEach(async () => {
    proxy = await TcpProxy.start({ port: (echo.address() as { port: number }).port });
  });

  afterEach(async () => {
    clients.splice(0).forEach((c) => c.destroy());
    await proxy.close();
  });

  afterAll(async () => {
    await new Promise((r) => echo.close(r));
  });

  /** A client through the proxy that collects what it receives. */
  async function client(): Promise<{
    socket: Socket;
    received: () => string;
    closed: () => boolean;
  }> {
    const socket = connect({ port: proxy.port, host: '127.0.0.1' });
    clients.push(socket);
    let data = '';
    let closed = false;
    socket.on('data', (d) => (data += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    await new Promise((r) => socket.once('connect', r));
    return { socket, received: () => data, closed: () => closed };
  }

  it('forwards both ways', async () => {
    const c = await client();
    c.socket.write('hello');
    await eventually(() => c.received() === 'hello');
    expect(proxy.connections).toBe(1);
  });

  it('blackhole holds every byte, on open and new connections, until heal delivers them in order', async () => {
    const before = await client();
    proxy.blackhole();
    const during = await client();
    echoed = '';
    before.socket.write('one,');
    before.socket.write('two');
    during.socket.write('three');
    // Held, not dropped: the proxy has all 12 bytes, the server none, both connections stay open.
    await eventually(() => proxy.held === 12);
    expect(echoed).toBe('');
    expect(before.received() + during.received()).toBe('');
    expect(before.closed() || during.closed()).toBe(false);
    proxy.heal();
    await eventually(() => before.received() === 'one,two' && during.received() === 'three');
  });

  it('delay adds latency per chunk and keeps order', async () => {
    const c = await client();
    proxy.delay = 150;
    const sent = performance.now();
    c.socket.write('a');
    c.socket.write('b');
    await eventually(() => c.received() === 'ab');
    // Two hops through the proxy (to the echo server and back), each delayed.
    expect(performance.now() - sent).toBeGreaterThanOrEqual(290);
  });

  it('jitter reorders chunks across connections and keeps each connection in order', async () => {
    const a = await client();
    const b = await client();
    echoed = '';
    proxy.jitter = 200;
    // The draws, in order: A1 waits 198 ms more, A2 and B none (and the echoes none).
    const draws = [0.99];
    proxy.random = () => draws.shift() ?? 0;
    a.socket.write('A1');
    await eventually(() => proxy.held === 2);
    a.socket.write('A2'); // due at once by its own draw, but never before A1 on the same stream
    await eventually(() => proxy.held === 4);
    b.socket.write('B'); // sent last, on another connection: arrives first
    await eventually(() => echoed.length === 5);
    expect(echoed).toBe('BA1A2');
    await eventually(() => a.received() === 'A1A2' && b.received() === 'B');
  });

  it('resetAll cuts every connection, and new ones work again', async () => {
    const a = await client();
    const b = await client();
    proxy.resetAll();
    await eventually(() => a.closed() && b.closed());
    const c = await client();
    c.socket.write('again');
    await eventually(() => c.received() === 'again');
  });
});
