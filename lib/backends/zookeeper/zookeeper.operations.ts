import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { LockInspection } from '../../interfaces/lock-backend.interface';
import { zk, type ZooKeeperClientLike } from './zookeeper.client';
import { deleteHolderNodes, inspectDirectory, listHeld } from './zookeeper.inspect';
import { lockDirectory } from './zookeeper.nodes';
import type { ZooKeeperSession } from './zookeeper.session';

/**
 * The operator side of ZooKeeperLockBackend (health, inspection, forced release), on the
 * backend's current session: each is one or two requests, and none touches the backend's own
 * contenders or held locks (a holder of ours learns a forced release through its node watch).
 */
export class ZooKeeperOperations {
  constructor(
    private readonly backend: string,
    private readonly basePath: () => string,
    private readonly session: (key: string) => ZooKeeperSession,
  ) {}

  async ping(): Promise<void> {
    const client = await this.connectedClient('ping');
    const bound = Math.max(this.session('ping').sessionTimeout, 1_000);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${bound} ms`)), bound);
    });
    try {
      await Promise.race([zk.exists(client, '/'), late]);
    } catch (error) {
      throw new LockBackendUnavailableError(this.backend, 'ZooKeeper did not answer a ping', {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  async inspect(key: string): Promise<LockInspection> {
    return inspectDirectory(
      await this.connectedClient(key),
      lockDirectory(this.basePath(), key),
      key,
    );
  }

  async forceRelease(key: string): Promise<boolean> {
    return (
      (await deleteHolderNodes(
        await this.connectedClient(key),
        lockDirectory(this.basePath(), key),
      )) > 0
    );
  }

  /** Held full keys under `prefix`: see listHeld for what one listing can and cannot answer. */
  async list(prefix: string, limit: number): Promise<string[]> {
    const client = await this.connectedClient(prefix);
    try {
      return await listHeld(client, this.basePath(), prefix, limit);
    } catch (error) {
      throw new LockBackendUnavailableError(
        this.backend,
        `listing the lock directories under ${this.basePath()} failed`,
        { key: prefix, cause: error },
      );
    }
  }

  private async connectedClient(key: string): Promise<ZooKeeperClientLike> {
    const session = this.session(key);
    const bound = AbortSignal.timeout(Math.max(session.sessionTimeout, 2_000));
    if (session.connected || (await session.whenConnected(bound))) return session.client;
    throw new LockBackendUnavailableError(
      this.backend,
      `not connected to ZooKeeper (${session.lostReason ?? session.state})`,
      { key },
    );
  }
}
