import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.zookeeper.CreateMode;

/**
 * A Java service using Apache Curator's InterProcessSemaphoreV2, driven line by line over stdin by
 * the semaphore interop tests (protocol: CuratorLineTool).
 * Usage: java CuratorSemaphoreTool <connectString> <sessionTimeoutMs>
 *   "<id> new <path> <maxLeases>"   -> "<id> ok"            (one semaphore instance per id)
 *   "<id> acquire <ms>"             -> "<id> acquired <lease node name>" | "<id> busy"
 *   "<id> release"                  -> "<id> released"      (returns the lease of <id>)
 *   "<id> hammer <n> <probeDir> <holdMs>" -> "<id> hammered <most>": n rounds of acquire (no
 *        timeout), create an EPHEMERAL_SEQUENTIAL `in-` node under probeDir, count probeDir's
 *        children (how many are inside now, ours and Curator's), sleep holdMs, delete the node,
 *        return the lease; <most> is the largest count this id saw
 *   "quit"
 * Each id gets its own thread: acquire blocks it while it waits.
 */
public class CuratorSemaphoreTool extends CuratorLineTool {
  private final Map<String, InterProcessSemaphoreV2> semaphores = new ConcurrentHashMap<>();
  private final Map<String, Lease> leases = new ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    new CuratorSemaphoreTool().run(args);
  }

  @Override
  protected void handle(String id, String[] p) {
    switch (p[1]) {
      case "new":
        semaphores.put(id, new InterProcessSemaphoreV2(client, p[2], Integer.parseInt(p[3])));
        out(id + " ok");
        break;
      case "acquire": {
        long ms = Long.parseLong(p[2]);
        onThread(id, () -> {
          Lease lease = semaphores.get(id).acquire(ms, TimeUnit.MILLISECONDS);
          if (lease == null) out(id + " busy");
          else {
            leases.put(id, lease);
            out(id + " acquired " + lease.getNodeName());
          }
        });
        break;
      }
      case "release":
        onThread(id, () -> {
          semaphores.get(id).returnLease(leases.remove(id));
          out(id + " released");
        });
        break;
      case "hammer": {
        int times = Integer.parseInt(p[2]);
        String probe = p[3];
        long hold = Long.parseLong(p[4]);
        onThread(id, () -> out(id + " hammered " + hammer(semaphores.get(id), times, probe, hold)));
        break;
      }
      default:
        unknown(id, p[1]);
    }
  }

  /** n rounds of acquire / count probe's children with our `in-` node / hold / return; the most seen. */
  private int hammer(InterProcessSemaphoreV2 semaphore, int times, String probe, long hold)
      throws Exception {
    int most = 0;
    for (int i = 0; i < times; i++) {
      Lease lease = semaphore.acquire();
      try {
        String mine = client.create().creatingParentsIfNeeded()
            .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(probe + "/in-");
        most = Math.max(most, client.getChildren().forPath(probe).size());
        Thread.sleep(hold);
        client.delete().forPath(mine);
      } finally {
        semaphore.returnLease(lease);
      }
    }
    return most;
  }
}
