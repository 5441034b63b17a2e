import { connect, createServer, type Server, type Socket } from 'node:net';
import { eventually } from './eventually';
import { resetOrClose, TcpProxy } from './tcp-proxy';

/**
 * The faults the ZooKeeper suites use on the one shared proxy: round-robin
 * over several servers, holding only replies, drop-and-refuse. The nemesis's faults (blackhole,
 * delay, resetAll) are covered by test/torture/tcp-proxy.spec.ts.
 */
describe('TcpProxy: several targets, replies held, drop', () => {
  const servers: Server[] = [];
  const received: string[] = ['', ''];
  const clients: Socket[] = [];
  let proxy: TcpProxy;

  beforeAll(async () => {
    for (const i of [0, 1]) {
      const server = createServer((s) => {
        s.on('error', () => undefined);
        s.on('data', (d) => {
          received[i] += d.toString();
          s.write(`${i}:${d.toString()}`);
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      servers.push(server);
    }
  });

  beforeEach(async () => {
    received.fill('');
    const ports = servers.map((s) => ({ port: (s.address() as { port: number }).port }));
    proxy = await TcpProxy.start(ports);
  });

  afterEach(async () => {
    clients.splice(0).forEach((c) => c.destroy());
    await proxy.close();
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  async function client(): Promise<{ socket: Socket; data: () => string; closed: () => boolean }> {
    const socket = connect({ port: proxy.port, host: '127.0.0.1' });
    clients.push(socket);
    let data = '';
    let closed = false;
    socket.on('data', (d) => (data += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    await new Promise((r) => socket.once('connect', r));
    return { socket, data: () => data, closed: () => closed };
  }

  it('spreads connections round-robin over the targets', async () => {
    expect(proxy.connectionString).toBe(`127.0.0.1:${proxy.port}`);
    const a = await client();
    const b = await client();
    a.socket.write('x');
    b.socket.write('y');
    await eventually(() => a.data() === '0:x' && b.data() === '1:y');
  });

  it("blackhole('replies') lets requests through and holds the answers until heal", async () => {
    const c = await client();
    proxy.blackhole('replies');
    c.socket.write('req');
    await eventually(() => received[0] === 'req' && proxy.held === 5);
    expect(c.data()).toBe('');
    proxy.heal();
    await eventually(() => c.data() === '0:req');
  });

  it('drop closes every connection and refuses new ones until heal', async () => {
    const a = await client();
    proxy.drop();
    await eventually(() => a.closed());
    const refused = await client();
    await eventually(() => refused.closed());
    proxy.heal();
    const c = await client();
    c.socket.write('back');
    await eventually(() => c.data().endsWith(':back'));
  });
});

/**
 * resetAll() on a connection the proxy has just half-closed: libuv refuses an RST while a
 * shutdown is pending (EINVAL), and Node then keeps the TCP handle open for ever, so the process
 * could never exit. resetOrClose closes such a socket instead.
 */
describe('TcpProxy: a reset right after a half-close', () => {
  it('closes the socket (its close event fires, no reset error)', async () => {
    const errors: unknown[] = [];
    let onClose!: () => void;
    const closed = new Promise<void>((r) => (onClose = r));
    const server = createServer((s) => {
      s.on('error', (error) => errors.push(error));
      s.once('close', onClose);
      s.end('bye'); // the shutdown is now pending
      resetOrClose(s);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = connect({
      port: (server.address() as { port: number }).port,
      host: '127.0.0.1',
    });
    client.on('error', () => undefined);
    client.resume();
    await closed;
    client.destroy();
    await new Promise((r) => server.close(r));
    expect(errors).toEqual([]);
  });
});
