import { fork } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { transpiledEnv, transpiledScript } from '../support/transpiled';

/**
 * A process whose lock backend cannot be reached exits by itself: with checkOnStartup 'fail' the
 * refused start-up closes what the backend created (its clients, their reconnect timers) before
 * throwing, and app.close() of an app whose server is a black hole (accepts connections, never
 * answers) destroys the owned clients instead of leaving them to connect forever. The app runs in
 * a child process so "exits by itself" is observable; it has 10 s after its last message.
 */
const EXIT_WITHIN_MS = 10_000;

function run(
  kind: string,
  scenario: 'fail' | 'close',
  port: number,
): Promise<{ messages: string[]; exited: boolean }> {
  return new Promise((resolve, reject) => {
    const script = transpiledScript(join(__dirname, 'startup-exit.process.ts'));
    const child = fork(script, [kind, scenario, String(port)], {
      execArgv: [],
      env: transpiledEnv(),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const messages: string[] = [];
    let killer: NodeJS.Timeout | undefined;
    let killed = false;
    child.on('message', (m) => {
      messages.push(String(m));
      clearTimeout(killer);
      killer = setTimeout(() => {
        killed = true;
        child.kill('SIGKILL');
      }, EXIT_WITHIN_MS);
    });
    child.on('error', reject);
    child.on('exit', () => {
      clearTimeout(killer);
      resolve({ messages, exited: !killed });
    });
  });
}

describe('a process whose backend cannot be reached exits by itself', () => {
  let closedPort: number;
  let blackHole: Server;
  const held: Socket[] = [];

  beforeAll(async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    closedPort = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    // Accepts every connection and never writes a byte.
    blackHole = createServer((socket) => {
      socket.on('error', () => undefined);
      held.push(socket);
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
  });

  afterAll(async () => {
    held.forEach((s) => s.destroy());
    await new Promise<void>((r) => blackHole.close(() => r()));
  });

  it.each([
    ['redis', 'closed'],
    ['redlock', 'closed'],
    ['postgres', 'closed'],
    ['zookeeper', 'closed'],
    ['postgres', 'black hole'],
    ['zookeeper', 'black hole'],
  ])(
    "%s: checkOnStartup 'fail' refuses to start (port %s), and the process exits",
    async (kind, where) => {
      const port = where === 'closed' ? closedPort : (blackHole.address() as { port: number }).port;
      const result = await run(kind, 'fail', port);
      expect(result.messages).toEqual([expect.stringMatching(/^refused: /)]);
      expect(result.exited).toBe(true);
    },
    30_000,
  );

  it.each(['postgres', 'zookeeper', 'redis', 'redlock'])(
    '%s: a closed app whose server is a black hole exits',
    async (kind) => {
      const port = (blackHole.address() as { port: number }).port;
      const result = await run(kind, 'close', port);
      expect(result.messages).toEqual(['closed']);
      expect(result.exited).toBe(true);
    },
    30_000,
  );
});
