import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

/**
 * A Java service using Apache Curator's lock recipes, driven line by line over stdin by the interop
 * tests (protocol: CuratorLineTool). Usage: java CuratorLockTool <connectString> <sessionTimeoutMs>
 *   "<id> new mutex|read|write <path>"  -> "<id> ok"
 *   "<id> acquire <ms>"                 -> "<id> acquired" | "<id> busy"
 *   "<id> release"                      -> "<id> released"
 *   "<id> hammer <n> <probePath>"       -> "<id> hammered <overlaps>": n rounds of acquire, create the
 *        EPHEMERAL probe node (NodeExists = someone else is inside too: an overlap), release
 *   "quit"
 * Each lock gets its own thread: Curator locks belong to the thread that acquired them.
 */
public class CuratorLockTool extends CuratorLineTool {
  private final Map<String, InterProcessLock> locks = new ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    new CuratorLockTool().run(args);
  }

  @Override
  protected void handle(String id, String[] p) {
    switch (p[1]) {
      case "new": {
        InterProcessLock lock;
        if (p[2].equals("mutex")) lock = new InterProcessMutex(client, p[3]);
        else if (p[2].equals("read")) lock = new InterProcessReadWriteLock(client, p[3]).readLock();
        else lock = new InterProcessReadWriteLock(client, p[3]).writeLock();
        locks.put(id, lock);
        out(id + " ok");
        break;
      }
      case "acquire": {
        long ms = Long.parseLong(p[2]);
        onThread(id, () -> out(id + (locks.get(id).acquire(ms, TimeUnit.MILLISECONDS) ? " acquired" : " busy")));
        break;
      }
      case "hammer": {
        int times = Integer.parseInt(p[2]);
        String probe = p[3];
        onThread(id, () -> out(id + " hammered " + hammer(locks.get(id), times, probe)));
        break;
      }
      case "release":
        onThread(id, () -> {
          locks.get(id).release();
          out(id + " released");
        });
        break;
      default:
        unknown(id, p[1]);
    }
  }

  /** n rounds of acquire / create the probe / release; returns how often the probe already existed. */
  private int hammer(InterProcessLock lock, int times, String probe) throws Exception {
    int overlaps = 0;
    for (int i = 0; i < times; i++) {
      lock.acquire();
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
        lock.release();
      }
    }
    return overlaps;
  }
}
