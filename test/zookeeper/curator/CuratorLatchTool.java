import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;

/**
 * A Java service using Apache Curator's LeaderLatch, driven line by line over stdin by the interop
 * tests (protocol: CuratorLineTool). Usage: java CuratorLatchTool <connectString> <sessionTimeoutMs>
 *   "<id> start <path> <participantId>" -> "<id> started"; later, asynchronously, "<id> isLeader" /
 *        "<id> notLeader" from LeaderLatchListener each time Curator changes its mind
 *   "<id> has"                           -> "<id> has true|false" (hasLeadership())
 *   "<id> leader"                        -> "<id> leader <participant id>|<isLeader>" (getLeader())
 *   "<id> participants"                  -> "<id> participants <n>"
 *   "<id> close"                         -> "<id> closed" (the latch's node is deleted)
 *   "quit"
 */
public class CuratorLatchTool extends CuratorLineTool {
  private final Map<String, LeaderLatch> latches = new ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    new CuratorLatchTool().run(args);
  }

  @Override
  protected void handle(String id, String[] p) throws Exception {
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
        unknown(id, p[1]);
    }
  }
}
