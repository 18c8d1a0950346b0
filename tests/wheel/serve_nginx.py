"""serve_nginx.py ROOT URL_FILE: nginx on 127.0.0.1 serving ROOT (tests/python/servers.py),
its base URL written to URL_FILE; stops nginx on SIGTERM, or after 900 s at most."""
from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from servers import nginx  # noqa: E402


def main() -> int:
    root, url_file = Path(sys.argv[1]), Path(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGALRM, lambda *_: sys.exit(3))
    signal.alarm(900)  # a bound on the whole life: never left behind
    with nginx(root) as base:
        url_file.write_text(base)
        while True:
            time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
