#!/usr/bin/env python3
"""serve_faults.py ROOT: nginx serving ROOT and, in front of it, the fault
proxy (faultproxy.py), both on free 127.0.0.1 ports, for the C tests (which
run under the sanitizers). Prints "READY <proxy base URL>" and then takes
commands on stdin, one a line, answering "ok" (or "error <why>"):

  set NAME VALUE   a FaultProxy attribute (latency, reset_every, burst_every,
                   burst_length, cut_every, stall) to a number
  counts           answers "ok requests=N reset=N 503=N cut=N stall=N"

Both servers stop when stdin closes (the test ended, or died), and at most
after 10 minutes in any case."""
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from faultproxy import fault_proxy  # noqa: E402
from servers import nginx  # noqa: E402

FIELDS = {"latency": float, "reset_every": int, "burst_every": int, "burst_length": int, "cut_every": int,
          "stall": lambda v: bool(int(v))}


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: serve_faults.py ROOT", file=sys.stderr)
        return 2
    # a bound on the whole life: a test that neither closes stdin nor dies
    # must not leave servers behind
    signal.signal(signal.SIGALRM, lambda *_: sys.exit(3))
    signal.alarm(600)
    with nginx(Path(sys.argv[1])) as base, fault_proxy(base) as proxy:
        print(f"READY {proxy.base}", flush=True)
        lock = threading.Lock()
        for line in sys.stdin:
            words = line.split()
            with lock:
                if len(words) == 3 and words[0] == "set" and words[1] in FIELDS:
                    try:
                        setattr(proxy, words[1], FIELDS[words[1]](words[2]))
                        print("ok", flush=True)
                    except ValueError as e:
                        print(f"error {e}", flush=True)
                elif words == ["counts"]:
                    f = proxy.faults
                    print(f"ok requests={proxy.requests} reset={f['reset']} 503={f['503']} cut={f['cut']} "
                          f"stall={f['stall']}", flush=True)
                elif words:
                    print(f"error unknown command: {line.strip()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
