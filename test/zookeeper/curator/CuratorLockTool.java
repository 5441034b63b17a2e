import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

/**
 * A Java service using Apache Curator's lock recipes, driven line by line over stdin by the interop
 * tests. Usage: java CuratorLockTool <connectString> <sessionTimeoutMs>
 *   "<id> new mutex|read|write <path>"  -> "<id> ok"
 *   "<id> acquire <ms>"                 -> "<id> acquired" | "<id> busy"
 *   "<id> release"                      -> "<id> released"
 *   "<id> hammer <n> <probePath>"       -> "<id> hammered <overlaps>": n rounds of acquire, create the
 *        EPHEMERAL probe node (NodeExists = someone else is inside too: an overlap), release
 *   "quit"
 * Each lock gets its own thread: Curator locks belong to the thread that acquired them.
 */
public class CuratorLockTool {
  private static final Map<String, InterProcessLock> locks = new ConcurrentHashMap<>();
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
          case "new": {
            InterProcessLock lock;
            if (p[2].equals("mutex")) lock = new InterProcessMutex(client, p[3]);
            else if (p[2].equals("read")) lock = new InterProcessReadWriteLock(client, p[3]).readLock();
            else lock = new InterProcessReadWriteLock(client, p[3]).writeLock();
            locks.put(id, lock);
            threads.put(id, Executors.newSingleThreadExecutor());
            out(id + " ok");
            break;
          }
          case "acquire": {
            long ms = Long.parseLong(p[2]);
            threads.get(id).submit(() -> {
              try {
                out(id + (locks.get(id).acquire(ms, TimeUnit.MILLISECONDS) ? " acquired" : " busy"));
              } catch (Exception e) {
                out(id + " error " + e);
              }
            });
            break;
          }
          case "hammer": {
            int times = Integer.parseInt(p[2]);
            String probe = p[3];
            threads.get(id).submit(() -> {
              int overlaps = 0;
              try {
                for (int i = 0; i < times; i++) {
                  locks.get(id).acquire();
                  try {
                    boolean mine = true;
                    try {
                      client.create().withMode(CreateMode.EPHEMERAL).forPath(probe);
                    } catch (KeeperException.NodeExistsException e) {
                      overlaps++;
                      mine = false;
                    }
                    Thread.sleep(1);
                    if (mine) client.delete().forPath(probe);
                  } finally {
                    locks.get(id).release();
                  }
                }
                out(id + " hammered " + overlaps);
              } catch (Exception e) {
                out(id + " error " + e);
              }
            });
            break;
          }
          case "release":
            threads.get(id).submit(() -> {
              try {
                locks.get(id).release();
                out(id + " released");
              } catch (Exception e) {
                out(id + " error " + e);
              }
            });
            break;
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
