import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';
import { describeLockConformance } from './lock-conformance';

/** In-process backend: every "process" shares one MemoryLockBackend store, as engines in one process do. */
class SharedMemory {
  readonly store = new MemoryLockBackend();
}

let shared = new SharedMemory();

describeLockConformance({
  name: 'memory',
  setup: async () => {
    shared = new SharedMemory();
    return {
      // Engines over one in-process store; close() of one engine must not disturb the others.
      createBackend: () =>
        Object.assign(Object.create(shared.store), { close: async () => undefined }),
      forceDelete: async (fullKey) => shared.store.forceDelete(fullKey),
      closeAll: async () => shared.store.close(),
    };
  },
  features: { outage: false },
});
