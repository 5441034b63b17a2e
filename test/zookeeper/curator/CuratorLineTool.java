import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;

/**
 * What the Curator tools share (compiled with each of them): the Curator client, the line protocol
 * and the threads. Usage of every tool: java <Tool> <connectString> <sessionTimeoutMs>; it prints
 * "ready" once connected, then reads "<id> <command> <args...>" lines from stdin until "quit" or
 * end of input, and answers "<id> <answer>", or "<id> error <exception>" when a command fails.
 */
public abstract class CuratorLineTool {
  protected CuratorFramework client;
  private final Map<String, ExecutorService> threads = new ConcurrentHashMap<>();

  /** A command's work; what it throws is printed as "<id> error <exception>". */
  protected interface Work {
    void run() throws Exception;
  }

  /** Handles one line: p[0] is the id, p[1] the command, p[2...] its arguments. */
  protected abstract void handle(String id, String[] p) throws Exception;

  protected void run(String[] args) throws Exception {
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
        handle(id, p);
      } catch (Exception e) {
        out(id + " error " + e);
      }
    }
    client.close();
    System.exit(0);
  }

  /**
   * Runs `work` on the id's own thread: Curator locks belong to the thread that acquired them, and
   * a blocking acquire then holds up only its own id.
   */
  protected void onThread(String id, Work work) {
    threads.computeIfAbsent(id, k -> Executors.newSingleThreadExecutor()).submit(() -> {
      try {
        work.run();
      } catch (Exception e) {
        out(id + " error " + e);
      }
    });
  }

  protected static void unknown(String id, String command) {
    out(id + " error unknown command " + command);
  }

  protected static synchronized void out(String s) {
    System.out.println(s);
    System.out.flush();
  }
}
