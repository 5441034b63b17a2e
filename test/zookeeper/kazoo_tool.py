"""A Python service using kazoo's Lock and Election, driven line by line over stdin by the interop
tests (test/zookeeper/kazoo-interop.spec.ts). Usage: python3 kazoo_tool.py <hosts> <sessionTimeoutMs>
  "<id> lock <path> <identifier> [extra_lock_pattern...]" -> "<id> ok"   (kazoo Lock, not acquired)
  "<id> acquire <timeout s>"   -> "<id> acquired" | "<id> timeout" (LockTimeout) | "<id> busy"
  "<id> release"               -> "<id> released"
  "<id> contenders"            -> "<id> contenders <json list>"
  "<id> elect <path> <identifier>" -> "<id> electing"; later "<id> leading" when Election.run calls
                                      its function, which holds leadership until "<id> resign"
  "<id> resign"                -> "<id> resigned" (the leader function returns: the node is deleted)
  "<id> cancel"                -> "<id> cancelled" (a contender that does not lead leaves the race)
  "quit"
Each lock or election runs its blocking calls on its own thread.
"""
import json
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

lock_out = threading.Lock()


def out(line):
    with lock_out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main():
    client = KazooClient(hosts=sys.argv[1], timeout=int(sys.argv[2]) / 1000.0)
    client.start(timeout=30)
    locks = {}
    elections = {}
    resign_events = {}
    out("ready")

    def acquire(ident, timeout):
        try:
            got = locks[ident].acquire(timeout=timeout)
            out(ident + (" acquired" if got else " busy"))
        except LockTimeout:
            out(ident + " timeout")
        except Exception as e:  # reported to the test, never swallowed
            out("%s error %r" % (ident, e))

    def elect(ident):
        def lead():
            out(ident + " leading")
            resign_events[ident].wait()

        try:
            elections[ident].run(lead)
            out(ident + " ended")
        except Exception as e:
            out("%s error %r" % (ident, e))

    for line in sys.stdin:
        p = line.strip().split(" ")
        if p[0] == "quit":
            break
        ident, cmd = p[0], p[1]
        try:
            if cmd == "lock":
                locks[ident] = client.Lock(p[2], p[3], extra_lock_patterns=tuple(p[4:]))
                out(ident + " ok")
            elif cmd == "acquire":
                threading.Thread(target=acquire, args=(ident, float(p[2])), daemon=True).start()
            elif cmd == "release":
                locks[ident].release()
                out(ident + " released")
            elif cmd == "contenders":
                target = locks.get(ident) or elections[ident]
                out(ident + " contenders " + json.dumps(target.contenders()))
            elif cmd == "elect":
                elections[ident] = client.Election(p[2], p[3])
                resign_events[ident] = threading.Event()
                threading.Thread(target=elect, args=(ident,), daemon=True).start()
                out(ident + " electing")
            elif cmd == "resign":
                resign_events[ident].set()
                out(ident + " resigned")
            elif cmd == "cancel":
                elections[ident].cancel()
                out(ident + " cancelled")
            else:
                out("%s error unknown command %s" % (ident, cmd))
        except Exception as e:
            out("%s error %r" % (ident, e))
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
