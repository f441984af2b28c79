"""Small, fast static file server for the benchmark sites (pure stdlib).

* listens on 127.0.0.1 only; threaded; HTTP/1.1 with keep-alive;
* serves only regular files below the root (directories and anything else: 404);
* Content-Type by suffix: ``.xml`` -> application/xml, ``.gz`` -> application/x-gzip
  (the gzip *file* is the body: no Content-Encoding), ``.txt`` -> text/plain;
* Content-Length always set; bodies are sent with ``socket.sendfile`` (zero copy);
* ``--delay-ms N`` sleeps N ms before every response (404s too) to simulate a slow
  server; each request sleeps in its own thread, so this is latency, not a queue.

As a script it prints ``READY http://127.0.0.1:PORT`` on stdout once listening;
``--port 0`` picks a free port.  As a module: ``start_in_thread(root, ...)`` or the
``ServerProcess`` context manager (what ``run.py`` uses, so the server's CPU and
memory are not counted with the tool being measured).
"""

from __future__ import annotations

import argparse
import os
import posixpath
import signal
import subprocess
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import unquote, urlsplit

HOST = "127.0.0.1"
CONTENT_TYPES: tuple[tuple[str, str], ...] = (
    (".xml.gz", "application/x-gzip"),
    (".gz", "application/x-gzip"),
    (".xml", "application/xml; charset=utf-8"),
    (".txt", "text/plain; charset=utf-8"),
    (".json", "application/json"),
    (".html", "text/html; charset=utf-8"),
)
NOT_FOUND_BODY = b"<html><body><h1>404 Not Found</h1></body></html>\n"


def content_type(path: str) -> str:
    low = path.lower()
    for suffix, ctype in CONTENT_TYPES:
        if low.endswith(suffix):
            return ctype
    return "application/octet-stream"


class StaticServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, root: Path, port: int, delay_ms: float) -> None:
        self.root = root.resolve()
        self.delay = delay_ms / 1000.0
        self.requests_served = 0
        self.bytes_served = 0
        self._lock = threading.Lock()
        super().__init__((HOST, port), StaticHandler)

    def handle_error(self, request: object, client_address: object) -> None:
        # a client that gives up mid-body (timeout, crawl stopped) is not a server error
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]

    def count(self, nbytes: int) -> None:
        with self._lock:
            self.requests_served += 1
            self.bytes_served += nbytes


class StaticHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body (sendfile) are separate writes: without TCP_NODELAY a keep-alive
    # client's delayed ACK stalls each small response by ~40 ms (Nagle)
    disable_nagle_algorithm = True
    server_version = "sitemap-bench/1"
    sys_version = ""
    server: StaticServer

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: logging would cost more than serving

    def _resolve(self) -> Path | None:
        path = unquote(urlsplit(self.path).path)
        norm = posixpath.normpath(path).lstrip("/")
        if norm.startswith("..") or "\x00" in norm:
            return None
        full = self.server.root / norm
        return full if full.is_file() else None

    def _respond(self, head: bool) -> None:
        if self.server.delay:
            time.sleep(self.server.delay)
        full = self._resolve()
        if full is None:
            self.send_response(HTTPStatus.NOT_FOUND)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(NOT_FOUND_BODY)))
            self.end_headers()
            if not head:
                self.wfile.write(NOT_FOUND_BODY)
            self.server.count(0)
            return
        with open(full, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type(full.name))
            self.send_header("Content-Length", str(size))
            self.end_headers()  # flushes the header buffer to the socket
            if not head and size:
                self.connection.sendfile(f)
        self.server.count(size)

    def do_GET(self) -> None:
        self._respond(head=False)

    def do_HEAD(self) -> None:
        self._respond(head=True)


def start_in_thread(root: Path, port: int = 0, delay_ms: float = 0) -> tuple[StaticServer, threading.Thread]:
    """Start a server in a daemon thread of this process; stop with ``server.shutdown()``."""
    server = StaticServer(root, port, delay_ms)
    thread = threading.Thread(target=server.serve_forever, name="static-server", daemon=True)
    thread.start()
    return server, thread


class ServerProcess:
    """Run ``serve.py`` in a child process; ``.port``, ``.base_url`` and ``.pid`` once entered."""

    def __init__(self, root: Path, port: int = 0, delay_ms: float = 0, python: str | None = None) -> None:
        self.cmd = [
            python or sys.executable,
            str(Path(__file__).resolve()),
            "--root",
            str(root),
            "--port",
            str(port),
            "--delay-ms",
            str(delay_ms),
        ]
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.base_url = ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> Self:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"server did not start (port {self.cmd[5]} in use? see its stderr above): {line!r}")
        self.base_url = line.split(" ", 1)[1]
        self.port = int(self.base_url.rsplit(":", 1)[1])
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, required=True, help="directory to serve")
    ap.add_argument("--port", type=int, default=8931, help="0 = any free port")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="sleep before each response")
    a = ap.parse_args(argv)
    server = StaticServer(a.root, a.port, a.delay_ms)

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    port = server.server_address[1]
    print(f"READY http://{HOST}:{port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        print(
            f"served {server.requests_served} responses, {server.bytes_served} bytes",
            file=sys.stderr,
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
