import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.RetryOneTime;

/**
 * A Java service using Apache Curator's LeaderLatch, driven line by line over stdin by the interop
 * tests. Usage: java CuratorLatchTool <connectString> <sessionTimeoutMs>
 *   "<id> start <path> <participantId>" -> "<id> started"; later, asynchronously, "<id> isLeader" /
 *        "<id> notLeader" from LeaderLatchListener each time Curator changes its mind
 *   "<id> has"                           -> "<id> has true|false" (hasLeadership())
 *   "<id> leader"                        -> "<id> leader <participant id>|<isLeader>" (getLeader())
 *   "<id> participants"                  -> "<id> participants <n>"
 *   "<id> close"                         -> "<id> closed" (the latch's node is deleted)
 *   "quit"
 */
public class CuratorLatchTool {
  private static final Map<String, LeaderLatch> latches = new ConcurrentHashMap<>();
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
          case "start": {
            LeaderLatch latch = new LeaderLatch(client, p[2], p[3]);
            latch.addListener(new LeaderLatchListener() {
              @Override
              public void isLeader() {
                out(id + " isLeader");
              }

              @Override
              public void notLeader() {
                out(id + " notLeader");
              }
            });
            latches.put(id, latch);
            latch.start();
            out(id + " started");
            break;
          }
          case "has":
            out(id + " has " + latches.get(id).hasLeadership());
            break;
          case "leader": {
            Participant leader = latches.get(id).getLeader();
            out(id + " leader " + leader.getId() + "|" + leader.isLeader());
            break;
          }
          case "participants":
            out(id + " participants " + latches.get(id).getParticipants().size());
            break;
          case "close":
            latches.remove(id).close();
            out(id + " closed");
            break;
          default:
            out(id + " error unknown command " + p[1]);
        }
      } catch (Exception e) {
        out(id + " error " + e);
      }
    }
    client.close();
  }

  private static synchronized void out(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
