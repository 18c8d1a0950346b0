# tests/python/faultproxy.py: a small fault-injecting HTTP proxy for the
# remote-input tests: it sits on a free 127.0.0.1 port in front of a real
# server (nginx) and, by request number, adds latency, resets connections,
# answers 503 in bursts, cuts bodies short, stops answering, or holds the
# requests for chosen paths until the test releases them. Faults are
# deterministic (every k-th request, or by path), so a test can count on
# them. Every wait is bounded; stop() ends every thread.
from __future__ import annotations

import socket
import struct
import threading
import time
from contextlib import contextmanager
from typing import Iterator, List, Optional


class FaultProxy:
    """Forwards each request on a fresh upstream connection ("Connection:
    close"); the faults below apply by request number n = 1, 2, ..."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.latency = 0.0        # seconds added before forwarding each request
        self.reset_every = 0      # every k-th request: the connection is reset (RST), no answer
        self.burst_every = 0      # every k-th request starts a burst of 503s ...
        self.burst_length = 2     # ... this many requests long
        self.cut_every = 0        # every k-th request: the body is cut in half, then the connection closed
        self.stall = False        # read requests, never answer
        self.stall_after = 0      # > 0: requests after the first stall_after are read and never answered
        self.hold: tuple = ()     # requests whose target contains one of these wait for `release` ...
        self.hold_seconds = 60.0  # ... at most this long, then go on
        self.release = threading.Event()
        self.held = 0             # requests that waited at the hold
        self.requests = 0
        self.bytes_out = 0        # response bytes sent to clients (headers included)
        self.faults = {"reset": 0, "503": 0, "cut": 0, "stall": 0}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: List[threading.Thread] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._burst_left = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FaultProxy":
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        self._sock.close()

    # ------------------------------------------------------------ internals

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                c, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            t.start()
            self._threads.append(t)

    def _read_request(self, c: socket.socket) -> Optional[bytes]:
        buf = b""
        deadline = time.monotonic() + 30
        while b"\r\n\r\n" not in buf:
            if self._stop.is_set() or time.monotonic() > deadline:
                return None
            try:
                chunk = c.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def _decide(self) -> "tuple[int, str]":
        with self._lock:
            self.requests += 1
            n = self.requests
            kind = "ok"
            if self.stall or (self.stall_after and n > self.stall_after):
                kind = "stall"
            elif self._burst_left > 0:
                self._burst_left -= 1
                kind = "503"
            elif self.burst_every and n % self.burst_every == 0:
                self._burst_left = self.burst_length - 1
                kind = "503"
            elif self.reset_every and n % self.reset_every == 0:
                kind = "reset"
            elif self.cut_every and n % self.cut_every == 0:
                kind = "cut"
            if kind != "ok":
                self.faults[kind] += 1
            return n, kind

    def _serve(self, c: socket.socket) -> None:
        c.settimeout(0.2)
        try:
            while not self._stop.is_set():
                req = self._read_request(c)
                if req is None:
                    return
                _, kind = self._decide()
                target = req.split(b"\r\n", 1)[0]
                if any(h.encode() in target for h in self.hold) and not self.release.is_set():
                    with self._lock:
                        self.held += 1
                    deadline = time.monotonic() + self.hold_seconds
                    while not self._stop.is_set() and time.monotonic() < deadline:
                        if self.release.wait(0.05):
                            break
                if self.latency:
                    time.sleep(self.latency)
                if kind == "stall":
                    while not self._stop.is_set():
                        time.sleep(0.05)
                    return
                if kind == "reset":
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                if kind == "503":
                    c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                    continue
                head, _, _ = req.partition(b"\r\n\r\n")
                lines = [ln for ln in head.split(b"\r\n") if not ln.lower().startswith(b"connection:")]
                up = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=10)
                try:
                    up.sendall(b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n")
                    resp = b""
                    while True:
                        chunk = up.recv(1 << 20)
                        if not chunk:
                            break
                        resp += chunk
                finally:
                    up.close()
                if kind == "cut":
                    h, _, body = resp.partition(b"\r\n\r\n")
                    c.sendall(h + b"\r\n\r\n" + body[: len(body) // 2])
                    return
                with self._lock:
                    self.bytes_out += len(resp)
                c.sendall(resp)
                if b"connection: close" in resp.partition(b"\r\n\r\n")[0].lower():
                    return
        except OSError:
            return
        finally:
            c.close()


@contextmanager
def fault_proxy(upstream_base: str) -> Iterator[FaultProxy]:
    """A FaultProxy in front of http://127.0.0.1:PORT, stopped afterwards."""
    port = int(upstream_base.rsplit(":", 1)[1].split("/")[0])
    p = FaultProxy(port).start()
    try:
        yield p
    finally:
        p.stop()
