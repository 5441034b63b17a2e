import { ToyLockBackend } from '../example-backend/toy-lock.backend';
import { ToyLockServer } from '../example-backend/toy-lock.server';
import { describeLockConformance } from './lock-conformance';

/**
 * The example backend of docs/writing-a-backend.md (test/example-backend/, written against the
 * public backend kit only) passes the same conformance suite as the built-in backends, outages
 * included: the fixture stops and restarts its toy server.
 */
let server: ToyLockServer;
const backends = new Set<ToyLockBackend>();

describeLockConformance({
  name: 'example (toy JSON-lines server)',
  setup: async () => {
    server = await ToyLockServer.start();
    return {
      createBackend: () => {
        const backend = new ToyLockBackend({ port: server.port });
        backends.add(backend);
        return backend;
      },
      forceDelete: async (fullKey) => server.forceDelete(fullKey),
      // The toy server runs in this process: a stall of its event loop (seen twice in full runs on
      // 2 cores, never alone) delays the renewal and the server's answer alike. 1 s keeps the
      // expiry cases short without making a few hundred ms of stall a lost lock.
      ttl: 1_000,
      outage: { stop: () => server.stop(), start: () => server.listen() },
      closeAll: async () => {
        await Promise.all([...backends].map((b) => b.close()));
        backends.clear();
      },
    };
  },
  teardown: async () => server?.stop(),
});
