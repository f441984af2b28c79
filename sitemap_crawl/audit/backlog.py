"""The audit's backlog: bodies handed to the audit, bounded in bytes, none dropped.

Pure: the owner gives three callables. ``send(job)`` hands a job on (it is *in flight*
until the owner calls :meth:`AuditBacklog.done` with its id); ``pause()`` and
``resume()`` stop and restart whatever produces the jobs (the crawl's engine).

At most ``limit`` bytes are in flight, or one job when it alone is larger. Jobs past
that wait here in order, and the producer is paused while any job waits or the bytes
in flight reach the limit: with a slow audit, the bodies that pile up are the few the
downloader had already started, not the rest of the site.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any


class AuditBacklog:
    """Jobs in flight (bounded in bytes) and jobs waiting, in order."""

    def __init__(
        self,
        limit: int,
        send: Callable[[int, Any], None],
        pause: Callable[[], None],
        resume: Callable[[], None],
    ) -> None:
        self.limit = max(1, limit)
        self._send = send
        self._pause = pause
        self._resume = resume
        self._waiting: deque[tuple[int, Any, int]] = deque()
        self._in_flight: dict[int, int] = {}
        self.in_flight_bytes = 0
        self.max_in_flight_bytes = 0
        """The most bytes in flight at once (for tests and stats)."""
        self.paused = False
        self.pauses = 0
        """How many times the producer was paused."""
        self._next_id = 0
        self._pumping = False

    @property
    def idle(self) -> bool:
        """Whether no job is waiting or in flight."""
        return not self._waiting and not self._in_flight

    def in_flight_ids(self) -> list[int]:
        """The ids of the jobs in flight, oldest first."""
        return list(self._in_flight)

    def add(self, job: Any, size: int) -> int:
        """Queue a job of ``size`` bytes (0 for a message); its id is returned."""
        self._next_id += 1
        self._waiting.append((self._next_id, job, size))
        self._pump()
        return self._next_id

    def done(self, job_id: int) -> None:
        """A job in flight was handled: its bytes are free."""
        size = self._in_flight.pop(job_id, None)
        if size is not None:
            self.in_flight_bytes -= size
        self._pump()

    def _pump(self) -> None:
        if self._pumping:  # ``send`` may call ``done`` at once: the outer loop goes on
            return
        self._pumping = True
        try:
            waiting = self._waiting
            while waiting:
                job_id, job, size = waiting[0]
                if self._in_flight and self.in_flight_bytes + size > self.limit:
                    break
                waiting.popleft()
                self._in_flight[job_id] = size
                self.in_flight_bytes += size
                self.max_in_flight_bytes = max(self.max_in_flight_bytes, self.in_flight_bytes)
                self._send(job_id, job)
        finally:
            self._pumping = False
        self._throttle()

    def _throttle(self) -> None:
        full = bool(self._waiting) or self.in_flight_bytes >= self.limit
        if full and not self.paused:
            self.paused = True
            self.pauses += 1
            self._pause()
        elif not full and self.paused:
            self.paused = False
            self._resume()
