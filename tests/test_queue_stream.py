"""The queue's server commands (sitemap_crawl.queue.stream) against a real server: add once,
take, keep, claim after CLAIM_AFTER, dead-letter after MAX_ATTEMPTS, acknowledge once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

import pytest

from sitemap_crawl.arguments import SpiderArgumentError
from sitemap_crawl.queue import QueueConfig
from sitemap_crawl.queue.config import parse_queue_url, server_error
from sitemap_crawl.queue.stream import Acknowledgement, Lease, SiteQueue
from tests.support.queue_server import QueueServer

T = TypeVar("T")
ACKNOWLEDGED = Acknowledgement.ACKNOWLEDGED


def run(queue: SiteQueue, work: Awaitable[T]) -> T:
    async def main() -> T:
        try:
            return await work
        finally:
            await queue.close()

    return asyncio.run(main())


def queue_of(server: QueueServer, **options: float) -> SiteQueue:
    return SiteQueue(QueueConfig(server.url, **options))  # type: ignore[arg-type]


def test_the_same_homepage_added_twice_is_queued_once(queue_server: QueueServer) -> None:
    async def scenario(queue: SiteQueue) -> tuple[tuple[int, int], tuple[int, int], int]:
        first = await queue.add(["http://a.test/", "http://b.test/", "http://a.test/"])
        second = await queue.add(["http://b.test/", "http://c.test/"])
        return first, second, (await queue.status()).enqueued

    queue = queue_of(queue_server)
    assert run(queue, scenario(queue)) == ((2, 1), (1, 1), 3)


def test_take_ack_and_the_status_counts(queue_server: QueueServer) -> None:
    async def scenario(queue: SiteQueue) -> None:
        await queue.add([f"http://s{n}.test/" for n in range(5)])
        leases, dead = await queue.take("w1", 2)
        assert ([lease.homepage for lease in leases], dead) == (["http://s0.test/", "http://s1.test/"], 0)
        assert [lease.deliveries for lease in leases] == [1, 1]
        assert leases[0].attempt == f"{leases[0].entry_id}/1"
        other, _ = await queue.take("w2", 10)
        assert [lease.homepage for lease in other] == [f"http://s{n}.test/" for n in range(2, 5)]
        status = await queue.status()
        assert (status.enqueued, status.waiting, status.in_flight, status.workers) == (5, 0, 5, {"w1": 2, "w2": 3})
        assert not await queue.idle()
        assert await queue.ack("w1", [(leases[0], 7, False), (leases[1], 0, True)]) == [ACKNOWLEDGED, ACKNOWLEDGED]
        assert await queue.ack("w1", [(leases[0], 7, False)]) == [Acknowledgement.NOT_PENDING]  # counted once
        assert await queue.ack("w2", [(lease, 1, False) for lease in other]) == [ACKNOWLEDGED] * 3
        status = await queue.status()
        assert status.to_dict() == {
            "enqueued": 5,
            "waiting": 0,
            "in_flight": 0,
            "workers": {},
            "done": 5,
            "failed": 1,
            "dead_lettered": 0,
            "duplicates": 0,
            "pages": 10,
        }
        assert await queue.idle()

    queue = queue_of(queue_server)
    run(queue, scenario(queue))


def test_a_silent_site_is_claimed_then_dead_lettered(queue_server: QueueServer) -> None:
    async def scenario(queue: SiteQueue) -> None:
        await queue.add(["http://kills-its-worker.test/", "http://fine.test/"])
        first, _ = await queue.take("w1", 1)
        assert (await queue.take("w2", 0)) == ([], 0)
        # not silent long enough: w2 gets the other site, not w1's
        second, _ = await queue.take("w2", 5)
        assert [lease.homepage for lease in second] == ["http://fine.test/"]
        await asyncio.sleep(0.35)
        assert await queue.keep("w2", [second[0].entry_id]) == []  # w2 is alive: its hold is renewed
        claimed, dead = await queue.take("w3", 5)  # w1 went silent: its site is claimed, w2's is not
        assert ([(lease.homepage, lease.deliveries, lease.previous_holder) for lease in claimed], dead) == (
            [("http://kills-its-worker.test/", 2, "w1")],
            0,
        )
        assert await queue.keep("w1", [first[0].entry_id]) == [first[0].entry_id]  # w1 lost it
        await asyncio.sleep(0.35)
        again, _ = await queue.take("w4", 5)
        assert [lease.deliveries for lease in again if lease.homepage.startswith("http://kills")] == [3]
        await asyncio.sleep(0.35)
        last, dead = await queue.take("w5", 5)
        assert [lease.homepage for lease in last] == ["http://fine.test/"]  # w2 stopped renewing
        assert dead == 1
        letters = await queue.dead_letters()
        assert [(letter["homepage"], letter["attempts"]) for letter in letters] == [
            ("http://kills-its-worker.test/", 3)  # numbers: sitemaps-status --json gave "3"
        ]
        assert isinstance(letters[0]["time"], int)
        assert str(letters[0]["reason"]).startswith("taken 3 times and never finished (last by w4")
        status = await queue.status()
        assert (status.dead, status.in_flight, status.workers) == (1, 1, {"w5": 1})

    queue = queue_of(queue_server, claim_after=0.3, max_attempts=3)
    started = time.monotonic()
    run(queue, scenario(queue))
    assert time.monotonic() - started < 5


def test_only_the_attempt_that_holds_a_site_is_acknowledged(queue_server: QueueServer) -> None:
    # w1 was paused past CLAIM_AFTER: w2 took its site over. Whichever finishes first, the
    # server acknowledges (and counts) w2's attempt, the newest delivery, never w1's.
    async def scenario(queue: SiteQueue) -> None:
        await queue.add(["http://paused.test/", "http://late.test/"])
        first, _ = await queue.take("w1", 2)
        await asyncio.sleep(0.35)
        second, _ = await queue.take("w2", 2)
        assert [(lease.deliveries, lease.previous_holder) for lease in second] == [(2, "w1"), (2, "w1")]
        paused, late = first
        # w1 resumes before w2 is done with the first site: taken over, not acknowledged
        assert await queue.ack("w1", [(paused, 0, True)]) == [Acknowledgement.TAKEN_OVER]
        assert await queue.ack("w2", [(second[0], 5, False)]) == [ACKNOWLEDGED]
        # w2 is done with the second site first: w1 comes too late
        assert await queue.ack("w2", [(second[1], 3, False)]) == [ACKNOWLEDGED]
        assert await queue.ack("w1", [(late, 0, True)]) == [Acknowledgement.NOT_PENDING]
        status = await queue.status()
        assert (status.done, status.pages, status.unreachable, status.in_flight) == (2, 8, 0, 0)

    queue = queue_of(queue_server, claim_after=0.3)
    run(queue, scenario(queue))


def test_an_older_attempt_of_the_same_worker_is_not_acknowledged(queue_server: QueueServer) -> None:
    # w1 lost its site to w2, then took it back from a silent w2: only that newest delivery counts
    async def scenario(queue: SiteQueue) -> None:
        await queue.add(["http://back.test/"])
        (first,), _ = await queue.take("w1", 1)
        await asyncio.sleep(0.35)
        (second,), _ = await queue.take("w2", 1)
        await asyncio.sleep(0.35)
        (third,), _ = await queue.take("w1", 1)
        assert (third.deliveries, third.previous_holder) == (3, "w2")
        assert await queue.ack("w1", [(first, 1, False)]) == [Acknowledgement.TAKEN_OVER]
        assert await queue.ack("w2", [(second, 1, False)]) == [Acknowledgement.TAKEN_OVER]
        assert await queue.ack("w1", [(third, 1, False)]) == [ACKNOWLEDGED]
        assert (await queue.status()).done == 1

    queue = queue_of(queue_server, claim_after=0.3)
    run(queue, scenario(queue))


def test_an_entry_of_a_site_another_entry_maps_is_acknowledged_as_a_duplicate(queue_server: QueueServer) -> None:
    async def scenario(queue: SiteQueue) -> None:
        await queue.add(["http://a.test/x", "http://a.test/y", "http://b.test/"])  # (--keep-path)
        first, _ = await queue.take("w1", 2)
        other, _ = await queue.take("w2", 1)
        site = [Lease(lease.entry_id, "http://a.test/", lease.deliveries) for lease in first]
        b = Lease(other[0].entry_id, "http://b.test/", 1)
        owner = first[0].entry_id
        assert await queue.own("w1", site) == [owner, owner]  # the second entry: acknowledged, counted
        assert await queue.own("w2", [b]) == [b.entry_id]
        assert await queue.own("w1", site[:1]) == [owner]  # (taken again: still its own)
        assert await queue.ack("w1", [(site[0], 6, False)]) == [ACKNOWLEDGED]
        assert await queue.ack("w2", [(b, 1, False)]) == [ACKNOWLEDGED]
        status = await queue.status()
        assert (status.enqueued, status.in_flight, status.done, status.duplicates, status.pages) == (3, 0, 2, 1, 7)
        assert await queue.idle()
        # the queue started afresh (its keys deleted but the homepages hash): a new entry maps the site
        await queue.client.delete(queue.config.stream, queue.config.seen)
        await queue.add(["http://a.test/z"])
        again, _ = await queue.take("w3", 1)
        fresh = Lease(again[0].entry_id, "http://a.test/", 1)
        assert await queue.own("w3", [fresh]) == [fresh.entry_id]

    queue = queue_of(queue_server)
    run(queue, scenario(queue))


@pytest.mark.parametrize("path", ["/abc", "/7x", "/db10", "/1/2", "/\u00b2"])  # (² is a digit to isdigit)
def test_a_queue_url_whose_path_is_no_database_number_is_refused(path: str) -> None:
    # the client reads it as database 0, without a word: a typo mixed two queues
    with pytest.raises(SpiderArgumentError, match="the path is the database number"):
        parse_queue_url(f"redis://127.0.0.1:6379{path}")


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/3", "redis://127.0.0.1:6379/", "redis://127.0.0.1:6379"])
def test_a_queue_url_with_a_database_number_or_none(url: str) -> None:
    assert parse_queue_url(url) == url


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis://127.0.0.1:6379/0?foo=bar", "the Redis client has no option 'foo'"),
        ("rediss://127.0.0.1:6379/0?ssl_cert_reqs=bogus", "Invalid SSL Certificate Requirements Flag: bogus"),
        ("redis://[::1/0", "is not a redis:// or rediss:// URL (Invalid IPv6 URL)"),
        ("redis://127.0.0.1:6379/4?db=3", "two database numbers"),
    ],
)
def test_a_queue_url_the_client_would_fail_on_is_refused_at_start(url: str, why: str) -> None:
    # a traceback from the client (TypeError, ValueError), or ?db=3 silently read for /4
    with pytest.raises(SpiderArgumentError) as raised:
        parse_queue_url(url)
    assert why in str(raised.value)


def test_a_queue_key_holding_another_kind_of_value_is_told_at_start(queue_server: QueueServer) -> None:
    # "refused the connection" or, for a worker, mid-run "cannot be reached" (exit 0)
    from redis import Redis
    from redis.exceptions import ResponseError

    from sitemap_crawl.queue.stream import check_server

    config = QueueConfig(queue_server.url, key="wt")
    check_server(config)  # (no key yet: fine)
    client = Redis.from_url(queue_server.url)
    client.set("wt:sites", "not a stream")
    client.close()
    with pytest.raises(ResponseError) as raised:
        check_server(config)
    message = server_error(config.url, raised.value, config.key)
    assert message == (
        f"The queue server {queue_server.url} holds other data at a key of the queue (SITEMAP_CRAWL_QUEUE_KEY='wt': "
        "another application's keys?): WRONGTYPE the key 'wt:sites' holds a string, "
        "not the stream the queue keeps there"
    )


def test_a_wrong_type_from_a_pipeline_is_told_as_such_too() -> None:
    # a pipeline's (or a script's) error names its command first: it was "refused the connection"
    from redis.exceptions import ResponseError

    error = ResponseError("Command # 1 (XLEN q:sites) of pipeline caused error: ('WRONGTYPE Operation against a key',)")
    assert "holds other data at a key of the queue (SITEMAP_CRAWL_QUEUE_KEY='q'" in server_error(
        "redis://h:1/0", error, "q"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:TopSecret@[::1:6379/0", "redis://:***@[::1:6379/0"),  # (does not parse)
        ("redis://127.0.0.1:6379/0?password=p%40ss&db=0", "redis://127.0.0.1:6379/0?password=***&db=0"),
        ("redis://user:pw@127.0.0.1:6379/0", "redis://user:***@127.0.0.1:6379/0"),
        ("redis://127.0.0.1:6379/3?pass%77ord=TopSecret", "redis://127.0.0.1:6379/3?pass%77ord=***"),  # (decoded)
        ("rediss://127.0.0.1:6379/0?ssl_password=TopSecret", "rediss://127.0.0.1:6379/0?ssl_password=***"),
        ("redis://:Top@Secret@[::1:6379/0", "redis://:***@[::1:6379/0"),
        ("redis://user@127.0.0.1:6379/0?db=1", "redis://user@127.0.0.1:6379/0?db=1"),
    ],
)
def test_a_queue_password_is_never_shown(url: str, shown: str) -> None:
    from sitemap_crawl.queue.config import display_url

    assert display_url(url) == shown
    if "[" in url:
        with pytest.raises(SpiderArgumentError) as raised:
            parse_queue_url(url)
        assert "Top" not in str(raised.value) and "Secret" not in str(raised.value)


def test_a_server_that_refuses_is_told_from_one_that_cannot_be_reached() -> None:
    from redis.exceptions import AuthenticationError, ConnectionError, ResponseError, TimeoutError

    plain, tls = "redis://:secret@127.0.0.1:6379/0", "rediss://127.0.0.1:6380/0"
    assert server_error(plain, AuthenticationError("invalid username-password pair")) == (
        "The queue server redis://:***@127.0.0.1:6379/0 refused the connection: invalid username-password pair"
    )
    assert server_error(plain, ResponseError("DB index is out of range")).endswith(
        "refused the connection: DB index is out of range"
    )
    assert server_error(plain, ConnectionError("Error 111")) == (
        "The queue server redis://:***@127.0.0.1:6379/0 cannot be reached: Error 111"
    )
    assert server_error(tls, ConnectionError("Error 111 connecting.")) == (
        "The queue server rediss://127.0.0.1:6380/0 cannot be reached: Error 111 connecting"
    )  # (refused: a closed port, nothing to say of TLS; no doubled full stop before the worker's ": ...")
    # a TLS handshake a plain server never answers: "Timeout connecting to server", and why it may be
    assert server_error(tls, TimeoutError("Timeout connecting to server")) == (
        "The queue server rediss://127.0.0.1:6380/0 cannot be reached: Timeout connecting to server"
        " (a rediss:// URL: does the server speak TLS on that port?)"
    )


def test_the_status_text_says_how_many_dead_letters_it_leaves_out() -> None:
    # it showed 5 of 15 without a word of the other 10
    from sitemap_crawl.queue.commands.status import DEAD_SHOWN, render

    status = {
        "enqueued": 20, "waiting": 0, "in_flight": 0, "workers": {}, "done": 5, "failed": 0,
        "dead_lettered": 15, "duplicates": 0, "pages": 9,
    }  # fmt: skip
    dead: list[dict[str, str | int]] = [
        {"homepage": f"http://s{n}.test/", "reason": "3 attempts"} for n in range(DEAD_SHOWN)
    ]
    text = render("redis://h/0", "k", status, dead)
    assert text.splitlines()[-1] == "    ... and 10 more (--json lists them all)"
    assert "more" not in render("redis://h/0", "k", {**status, "dead_lettered": DEAD_SHOWN}, dead)
