import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;

/**
 * A Java service using Apache Curator's InterProcessSemaphoreV2, driven line by line over stdin by
 * the semaphore interop tests. Usage: java CuratorSemaphoreTool <connectString> <sessionTimeoutMs>
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
public class CuratorSemaphoreTool {
  private static final Map<String, InterProcessSemaphoreV2> semaphores = new ConcurrentHashMap<>();
  private static final Map<String, Lease> leases = new ConcurrentHashMap<>();
  private static final Map<String, ExecutorService> threads = new ConcurrentHashMap<>();
  private static CuratorFramework client;

  public static void main(String[] args) throws Exception {
    client = CuratorFrameworkFactory.builder()
        .connectString(args[0])
        .sessionTimeoutMs(Integer.parseInt(args[1]))
        .connectionTimeoutMs(10_000)
        .retryPolicy(new RetryOneTime(100))
        .build();
    client.start();
    if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("not connected");
    out("ready");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String line;
    while ((line = in.readLine()) != null) {
      String[] p = line.trim().split(" ");
      if (p[0].equals("quit")) break;
      String id = p[0];
      try {
        switch (p[1]) {
          case "new":
            semaphores.put(id, new InterProcessSemaphoreV2(client, p[2], Integer.parseInt(p[3])));
            threads.put(id, Executors.newSingleThreadExecutor());
            out(id + " ok");
            break;
          case "acquire": {
            long ms = Long.parseLong(p[2]);
            threads.get(id).submit(() -> {
              try {
                Lease lease = semaphores.get(id).acquire(ms, TimeUnit.MILLISECONDS);
                if (lease == null) out(id + " busy");
                else {
                  leases.put(id, lease);
                  out(id + " acquired " + lease.getNodeName());
                }
              } catch (Exception e) {
                out(id + " error " + e);
              }
            });
            break;
          }
          case "release":
            threads.get(id).submit(() -> {
              try {
                semaphores.get(id).returnLease(leases.remove(id));
                out(id + " released");
              } catch (Exception e) {
                out(id + " error " + e);
              }
            });
            break;
          case "hammer": {
            int times = Integer.parseInt(p[2]);
            String probe = p[3];
            long hold = Long.parseLong(p[4]);
            threads.get(id).submit(() -> {
              int most = 0;
              try {
                for (int i = 0; i < times; i++) {
                  Lease lease = semaphores.get(id).acquire();
                  try {
                    String mine = client.create().creatingParentsIfNeeded()
                        .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(probe + "/in-");
                    most = Math.max(most, client.getChildren().forPath(probe).size());
                    Thread.sleep(hold);
                    client.delete().forPath(mine);
                  } finally {
                    semaphores.get(id).returnLease(lease);
                  }
                }
                out(id + " hammered " + most);
              } catch (Exception e) {
                out(id + " error " + e);
              }
            });
            break;
          }
          default:
            out(id + " error unknown command " + p[1]);
        }
      } catch (Exception e) {
        out(id + " error " + e);
      }
    }
    client.close();
    System.exit(0);
  }

  private static synchronized void out(String s) {
    System.out.println(s);
    System.out.flush();
  }
}
