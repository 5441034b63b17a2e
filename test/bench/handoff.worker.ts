import type { LockClient } from './bench.contenders';
import { contendersFor } from './bench.context';
import { driveClients } from './bench.handoff';
import { BenchServers } from './bench.servers';
import type { WorkerMessage, WorkerReply } from './bench.workers';

/**
 * A worker process of the contended scenarios (started by WorkerPool): 'prepare' connects its
 * clients of the named contender, each 'go' runs one handoff window from the shared instant and
 * reports, 'close' closes the clients. One process = one application instance.
 */
let clients: LockClient[] = [];

const send = (m: WorkerReply) => process.send?.(m);

process.on('message', (m: WorkerMessage) => {
  void handle(m).catch((error) => {
    if (m.cmd !== 'exit')
      send({
        cmd: 'failed',
        id: m.id,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
  });
});

async function handle(m: WorkerMessage): Promise<void> {
  switch (m.cmd) {
    case 'exit':
      await closeAll();
      return process.exit(0);
    case 'prepare': {
      await closeAll();
      const servers = BenchServers.attached(m.endpoints);
      const contender = contendersFor(m.system, { raw: true }).find((c) => c.name === m.contender);
      if (!contender) throw new Error(`no contender "${m.contender}" on ${m.system}`);
      clients = await Promise.all(
        Array.from({ length: m.clients }, () => contender.connect(servers)),
      );
      return void send({ cmd: 'ready', id: m.id });
    }
    case 'go':
      return void send({
        cmd: 'done',
        id: m.id,
        report: await driveClients(clients, m.options, BigInt(m.startNs)),
      });
    case 'close':
      await closeAll();
      return void send({ cmd: 'closed', id: m.id });
  }
}

async function closeAll(): Promise<void> {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  clients = [];
}

process.on('disconnect', () => process.exit(0));
send({ cmd: 'up' });
