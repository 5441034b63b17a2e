import type Redis from 'ioredis';
import { RedlockMasters } from '../redlock/redlock.servers';
import { describeLockConformance } from './lock-conformance';

let masters: RedlockMasters;

describeLockConformance({
  name: 'redlock (5 masters)',
  setup: async () => {
    masters = await RedlockMasters.start(5);
    return {
      createBackend: () => masters.backend(),
      forceDelete: (fullKey) => masters.forceDelete(fullKey),
      // The process dies: its connections to every master go away without a release.
      crash: async (backend) =>
        (backend as unknown as { clients: Redis[] }).clients.forEach((c) => c.disconnect()),
      outage: {
        stop: async () => {
          await Promise.all(masters.servers.map((s) => s.kill()));
        },
        start: async () => {
          await Promise.all(masters.servers.map((s) => s.start()));
        },
      },
      closeAll: async () => masters.closeClients(),
    };
  },
  teardown: async () => masters?.destroy(),
});
