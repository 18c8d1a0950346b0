#!/usr/bin/env python3
"""serve_hostile.py FILE: a misbehaving HTTP server on a free 127.0.0.1 port,
serving FILE's bytes the wrong way, chosen by the URL's first path segment
(/MODE/anything), for the tests of issue 20's section 3 and 4:

  gzip      a gzip bomb: a 206 to any range with "Content-Encoding: gzip"
            and a Content-Range over the whole bomb: about 4 MB that
            inflate to 4 GiB of zeros
  endless   a 206 with the right Content-Range and no Content-Length, then
            1 MiB chunks for up to 20 s (or until the client goes)
  whole     a 200 for a range request, "Content-Length: 53000000", then
            zeros for as long as the client takes them
  shifted   a 206 whose Content-Range and body start 4096 bytes after the
            asked start (FILE's real bytes there)
  good      FILE's bytes, answering Range as it should
  to-ftp    a 302 to ftp:// (on the second port below)
  to-other  a 307 to /good/v.mp4 on a second port: another origin, which
            serves as `good` does and records each request's head
  to-same   a 307 to /good/v.mp4 on the same port (a relative Location)
  seen      a 200 whose body is the heads the second port received

Prints "READY <base URL>", serves until stdin closes (the test ended or
died), at most 10 minutes. Every socket wait and send loop is bounded.

serve_hostile.py FILE --run CLI [CAP_GB]: serves, and runs `CLI frames
URL --at 0,5 --raw /dev/null` once per mode (its address space capped at
CAP_GB, default 2), printing exit status, peak RSS (wait4), time and the
message (the numbers of docs/RELIABILITY.md)."""
from __future__ import annotations

import os
import re
import signal
import socket
import sys
import threading
import time
import zlib

GIB = 1 << 30
MIB = 1 << 20


def gzip_bomb(inflated: int = 4 * GIB) -> bytes:
    """A gzip stream of `inflated` zeros, made in a second: after a full
    flush the compressor starts afresh, so each further MiB of zeros
    compresses to the very same bytes, which are repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    assert again == c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    # the trailer's CRC is not worth 4 GiB of hashing: the body is refused
    # (or, unfixed, inflated) long before a client reads it
    tail = c.flush(zlib.Z_FINISH)
    return first + again * (inflated // MIB - 1) + tail


class Hostile:
    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            self.data = f.read()
        self.bomb = gzip_bomb()
        self.stop = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.sock.settimeout(0.2)
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        # the other origin of the redirect modes; what it received
        self.other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.other.bind(("127.0.0.1", 0))
        self.other.listen(32)
        self.other.settimeout(0.2)
        self.other_base = f"http://127.0.0.1:{self.other.getsockname()[1]}"
        self.seen: list[str] = []

    def accept_loop(self, sock: socket.socket | None = None) -> None:
        sock = sock or self.sock
        while not self.stop.is_set():
            try:
                c, _ = sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self.serve, args=(c, sock is self.other), daemon=True).start()

    def serve(self, c: socket.socket, record: bool = False) -> None:
        c.settimeout(5)
        try:
            while not self.stop.is_set():
                req = b""
                while b"\r\n\r\n" not in req and len(req) < 65536:
                    chunk = c.recv(65536)
                    if not chunk:
                        return
                    req += chunk
                if record:
                    self.seen.append(req.decode("latin-1"))
                if not self.answer(c, req.decode("latin-1")):
                    return
        except OSError:
            return
        finally:
            c.close()

    def send_for(self, c: socket.socket, chunk: bytes, total: int, seconds: float) -> None:
        """Sends chunk again and again, up to `total` bytes or `seconds`."""
        end, sent = time.monotonic() + seconds, 0
        while sent < total and time.monotonic() < end and not self.stop.is_set():
            piece = chunk[: total - sent]
            c.sendall(piece)
            sent += len(piece)

    def answer(self, c: socket.socket, req: str) -> bool:
        """Answers one request; False: close the connection."""
        line = req.split("\r\n", 1)[0]
        path = line.split(" ")[1] if " " in line else "/"
        mode = path.strip("/").split("/")[0].split("?")[0]
        m = re.search(r"(?im)^range:\s*bytes=(\d+)-(\d*)", req)
        size = len(self.data)
        a = int(m.group(1)) if m else 0
        b = min(int(m.group(2)) if m and m.group(2) else size - 1, size - 1)
        if mode in ("to-ftp", "to-other", "to-same"):
            to = {"to-ftp": f"ftp://127.0.0.1:{self.other.getsockname()[1]}/v.mp4",
                  "to-other": f"{self.other_base}/good/v.mp4", "to-same": "/good/v.mp4"}[mode]
            c.sendall(f"HTTP/1.1 {302 if mode == 'to-ftp' else 307} Redirect\r\nLocation: {to}\r\n"
                      f"Content-Length: 0\r\n\r\n".encode())
            return True
        if mode == "seen":
            body = "".join(self.seen).encode("latin-1")
            c.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            return True
        if mode == "gzip":
            n = len(self.bomb)
            c.sendall(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-{n - 1}/{n}\r\n"
                      f"Content-Length: {n}\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n".encode())
            c.sendall(self.bomb)
            return False
        if mode == "endless":
            c.sendall(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{size}\r\n"
                      f"Connection: close\r\n\r\n".encode())
            self.send_for(c, bytes(MIB), 2000 * MIB, 20)
            return False
        if mode == "whole":
            n = 53_000_000
            c.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n".encode())
            self.send_for(c, bytes(MIB), n, 20)
            return False
        if mode == "shifted":
            a, b = min(a + 4096, size - 1), min(b + 4096, size - 1)
        elif mode != "good":
            c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return True
        body = self.data[a: b + 1]
        c.sendall(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{size}\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        return True


def run_cli(base: str, cli: str, cap_gb: float) -> None:
    import resource
    import subprocess

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (int(cap_gb * GIB), int(cap_gb * GIB)))

    for mode in ("gzip", "endless", "whole", "shifted"):
        t = time.monotonic()
        p = subprocess.Popen([cli, "frames", f"{base}/{mode}/v.mp4", "--at", "0,5", "--raw", "/dev/null"],
                             stderr=subprocess.PIPE, preexec_fn=cap)
        assert p.stderr is not None
        err = p.stderr.read().decode(errors="replace").strip()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        print(f"{mode}: exit {p.returncode}, peak RSS {ru.ru_maxrss // 1024} MB, {time.monotonic() - t:.1f} s: "
              f"{err[:300]}", flush=True)


def main() -> int:
    args = sys.argv[1:]
    if len(args) not in (1, 3, 4) or not os.path.isfile(args[0]) or (len(args) > 1 and args[1] != "--run"):
        print("usage: serve_hostile.py FILE [--run CLI [CAP_GB]]", file=sys.stderr)
        return 2
    signal.signal(signal.SIGALRM, lambda *_: os._exit(3))
    signal.alarm(600)
    h = Hostile(args[0])
    t = threading.Thread(target=h.accept_loop, daemon=True)
    t.start()
    t2 = threading.Thread(target=h.accept_loop, args=(h.other,), daemon=True)
    t2.start()
    if len(args) > 1:
        run_cli(h.base, args[2], float(args[3]) if len(args) > 3 else 2.0)
    else:
        print(f"READY {h.base}", flush=True)
        for _ in sys.stdin:  # until stdin closes
            pass
    h.stop.set()
    t.join(timeout=5)
    t2.join(timeout=5)
    h.sock.close()
    h.other.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
