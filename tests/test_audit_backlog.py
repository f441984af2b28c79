"""The audit's backlog (SITEMAP_CRAWL_AUDIT_BACKLOG): bodies with the audit are bounded in
bytes, the producer is paused past the bound, and no body is lost or reordered."""

from __future__ import annotations

import random
from typing import Any

from sitemap_crawl.audit.backlog import AuditBacklog


class SlowAudit:
    """An audit that handles one job in flight only when told to (``step``)."""

    def __init__(self, limit: int) -> None:
        self.sent: list[Any] = []
        self.queue: list[int] = []
        self.events: list[str] = []
        self.backlog = AuditBacklog(limit, self._send, lambda: self.events.append("pause"), self._resume)
        self.highest = 0

    def _send(self, job_id: int, job: Any) -> None:
        self.sent.append(job)
        self.queue.append(job_id)
        self.highest = max(self.highest, self.backlog.in_flight_bytes)

    def _resume(self) -> None:
        self.events.append("resume")

    def step(self) -> None:
        self.backlog.done(self.queue.pop(0))


def test_bytes_in_flight_never_pass_the_bound_and_nothing_is_lost() -> None:
    rng = random.Random(7)
    audit = SlowAudit(limit=1000)
    sizes = [rng.randint(0, 600) for _ in range(300)]
    for number, size in enumerate(sizes):
        while audit.backlog.paused and audit.queue and rng.random() < 0.8:
            audit.step()  # paused: the crawl waits (a download already started may still arrive)
        audit.backlog.add(("body", number), size)
        assert audit.backlog.in_flight_bytes <= 1000
        if rng.random() < 0.3 and audit.queue:  # the audit is slower than the downloads
            audit.step()
    while audit.queue:
        audit.step()
    assert audit.sent == [("body", number) for number in range(len(sizes))]  # all, in order
    assert audit.highest <= 1000
    assert audit.backlog.idle and audit.backlog.in_flight_bytes == 0
    assert audit.backlog.pauses > 1
    assert audit.events[0] == "pause" and audit.events[-1] == "resume"
    assert audit.events.count("pause") == audit.events.count("resume")  # alternate, never twice in a row
    assert all(a != b for a, b in zip(audit.events, audit.events[1:], strict=False))


def test_a_body_larger_than_the_bound_goes_alone() -> None:
    audit = SlowAudit(limit=100)
    audit.backlog.add("small", 10)
    audit.backlog.add("huge", 5000)
    audit.backlog.add("next", 10)
    assert audit.sent == ["small"] and audit.backlog.paused  # the huge one waits for the first
    audit.step()
    assert audit.sent == ["small", "huge"] and audit.backlog.in_flight_bytes == 5000
    audit.step()
    assert audit.sent == ["small", "huge", "next"]
    audit.step()
    assert audit.backlog.idle and not audit.backlog.paused


def test_messages_take_no_room_but_keep_their_place() -> None:
    audit = SlowAudit(limit=100)
    audit.backlog.add("body", 100)
    audit.backlog.add("forget site", 0)
    audit.backlog.add("finish", 0)
    assert audit.sent == ["body", "forget site", "finish"]  # behind the body, in order
    assert audit.backlog.paused  # the body fills the bound


def test_a_send_that_answers_at_once() -> None:
    """A gone audit process: each job is let go as it is sent (no recursion, no pause left on)."""
    handled: list[int] = []
    calls: list[str] = []

    def send(job_id: int, _job: Any) -> None:
        handled.append(job_id)
        backlog.done(job_id)

    backlog = AuditBacklog(10, send, lambda: calls.append("pause"), lambda: calls.append("resume"))
    for size in (50, 50, 0, 50):
        backlog.add(None, size)
    assert handled == [1, 2, 3, 4] and backlog.idle and not backlog.paused
