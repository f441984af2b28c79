"""The queue's commands on the server: add, take, keep, acknowledge, dead-letter, status.

A Redis Stream of homepages read by one consumer group: a worker *takes* entries
(XREADGROUP), which leaves them pending under its name until it *acknowledges* them
(XACK) once their pages and tree line are written. A live worker *keeps* its entries
(renews their idle time every quarter of CLAIM_AFTER, without counting a delivery);
entries silent for CLAIM_AFTER belonged to a dead worker and are claimed by the next
worker that takes (XCLAIM, which counts a delivery); an entry delivered
MAX_ATTEMPTS times goes to the dead-letter stream with the reason, and is
acknowledged. Only the attempt that holds an entry (its worker, its delivery) can
acknowledge it: a worker whose site was taken over is told so, and the acknowledged
attempt at a site is always its newest delivery. Every step that reads and then writes
runs as one Lua script, so that two workers never both claim an entry and a crash
between two commands loses nothing.

Uses redis-py's asyncio client (any Redis >= 6.2 or Valkey server): in a crawl the
awaits run on Scrapy's asyncio reactor, never blocking it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from redis import asyncio as aioredis
from redis.exceptions import ResponseError

from sitemap_crawl.queue.config import GROUP, QueueConfig

HOMEPAGE_FIELD = "homepage"
"""The field of a stream entry that holds its homepage."""

_ADD = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then
  redis.call('XADD', KEYS[2], '*', 'homepage', ARGV[1])
  return 1
end
return 0
"""
"""KEYS seen, stream; ARGV homepage: add it unless it was ever added (1: new, 0: already there)."""

_TAKE = """
local stream, dead = KEYS[1], KEYS[2]
local group, consumer, idle, now = ARGV[1], ARGV[2], ARGV[3], ARGV[6]
local count, max_attempts = tonumber(ARGV[4]), tonumber(ARGV[5])
local function homepage_of(fields)
  for i = 1, #fields, 2 do
    if fields[i] == 'homepage' then return fields[i + 1] end
  end
  return ''
end
local taken, dead_count = {}, 0
local silent = redis.call('XPENDING', stream, group, 'IDLE', idle, '-', '+', count)
for _, info in ipairs(silent) do
  local id, holder, silent_ms, deliveries = info[1], info[2], info[3], tonumber(info[4])
  if holder == consumer then
    -- this worker's own site (its renewal ran late): it is still being mapped here
  elseif deliveries >= max_attempts then
    local entry = redis.call('XRANGE', stream, id, id)
    local homepage = entry[1] and homepage_of(entry[1][2]) or ''
    local reason = 'taken ' .. deliveries .. ' times and never finished (last by ' .. holder
      .. ', silent for ' .. math.floor(silent_ms / 1000) .. ' s)'
    redis.call('XADD', dead, '*', 'homepage', homepage, 'entry', id, 'reason', reason,
      'attempts', deliveries, 'time', now)
    redis.call('XACK', stream, group, id)
    dead_count = dead_count + 1
  else
    local claimed = redis.call('XCLAIM', stream, group, consumer, idle, id)
    if claimed[1] and claimed[1][2] then
      table.insert(taken, {id, homepage_of(claimed[1][2]), deliveries + 1, holder})
    end
  end
end
if #taken < count then
  local read = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count - #taken, 'STREAMS', stream, '>')
  if read and read[1] then
    for _, entry in ipairs(read[1][2]) do
      table.insert(taken, {entry[1], homepage_of(entry[2]), 1, ''})
    end
  end
end
return {taken, dead_count}
"""
"""Take up to ``count`` entries: first those silent for CLAIM_AFTER (their worker died), dead-lettering
the ones taken MAX_ATTEMPTS times already, then new ones."""

_KEEP = """
local lost = {}
for i = 3, #ARGV do
  local info = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if info[1] and info[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
  else
    table.insert(lost, ARGV[i])
  end
end
return lost
"""
"""KEYS stream; ARGV group, consumer, ids: renew this worker's hold on its entries (JUSTID: no delivery
counted); the ids another worker holds now (or that are acknowledged) are returned."""

_ACK = """
local info = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if not info[1] then return 0 end
if info[1][2] ~= ARGV[2] or info[1][4] ~= tonumber(ARGV[4]) then return -1 end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('HINCRBY', KEYS[2], 'done', 1)
redis.call('HINCRBY', KEYS[2], 'pages', ARGV[5])
if ARGV[6] == '1' then redis.call('HINCRBY', KEYS[2], 'unreachable', 1) end
return 1
"""
"""KEYS stream, counts; ARGV group, consumer, id, delivery, pages, unreachable: acknowledge a site and
count it, only from the attempt that holds it (this consumer, this delivery); see :class:`Acknowledgement`."""


_OWN = """
local stream, homepages, counts = KEYS[1], KEYS[2], KEYS[3]
local group, consumer = ARGV[1], ARGV[2]
local owners = {}
for i = 3, #ARGV, 3 do
  local id, delivery, homepage = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local owner = redis.call('HGET', homepages, homepage)
  if not owner or owner == id or #redis.call('XRANGE', stream, owner, owner) == 0 then
    redis.call('HSET', homepages, homepage, id)
    owner = id
  else
    local info = redis.call('XPENDING', stream, group, id, id, 1)
    if info[1] and info[1][2] == consumer and info[1][4] == delivery then
      redis.call('XACK', stream, group, id)
      redis.call('HINCRBY', counts, 'duplicates', 1)
    end
  end
  table.insert(owners, owner)
end
return owners
"""
"""KEYS stream, homepages, counts; ARGV group, consumer, then (id, delivery, homepage) per entry taken: the
entry that maps each homepage (as the worker reduced it). The first entry of a homepage owns it (an
owner no longer in the stream, after a queue started afresh, is replaced); an entry of a homepage
another entry owns is a duplicate: acknowledged and counted as one, by the attempt that holds it."""


class Acknowledgement(IntEnum):
    """What the server did with a worker's acknowledgement of its attempt at a site."""

    ACKNOWLEDGED = 1
    """The attempt held the site: it is the site's acknowledged attempt, and counted."""
    NOT_PENDING = 0
    """The site was no longer pending: a newer attempt was acknowledged, or it was dead-lettered."""
    TAKEN_OVER = -1
    """A newer attempt holds the site (it was taken over): not acknowledged, nothing counted."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A site a worker took: its stream entry, homepage, and how many times it was delivered."""

    entry_id: str
    homepage: str
    deliveries: int
    previous_holder: str = ""
    """The worker that held it before (a claim), or ''."""

    @property
    def attempt(self) -> str:
        """The name of this attempt at the site: ``<entry id>/<delivery>`` (unique: every
        delivery of an entry has its own number)."""
        return f"{self.entry_id}/{self.deliveries}"


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """What ``sitemaps-status`` shows."""

    enqueued: int
    waiting: int | None
    in_flight: int
    workers: dict[str, int]
    done: int
    unreachable: int
    dead: int
    pages: int
    duplicates: int = 0
    """Entries acknowledged unmapped: their homepage reduces to a site another entry maps."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "enqueued": self.enqueued,
            "waiting": self.waiting,
            "in_flight": self.in_flight,
            "workers": dict(self.workers),
            "done": self.done,
            "failed": self.unreachable,
            "dead_lettered": self.dead,
            "duplicates": self.duplicates,
            "pages": self.pages,
        }


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


CONNECT_TIMEOUT = 10
"""Seconds to wait for the server to accept a connection."""


def check_server(config: QueueConfig) -> None:
    """PING the server with redis-py's blocking client: RedisError when it cannot be reached.

    For the one moment a worker must know before its crawl starts (its spider's
    ``from_crawler``, before any request): the crawl's own commands use the asyncio client.
    """
    from redis import Redis
    from redis.exceptions import ResponseError

    client = Redis.from_url(config.url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=CONNECT_TIMEOUT)
    try:
        client.ping()
        for key, kind in config.key_kinds.items():
            found = client.type(key)
            found = found.decode() if isinstance(found, bytes) else str(found)
            if found not in ("none", kind):  # (WRONGTYPE at its first use: the worker's would be mid-run)
                raise ResponseError(f"WRONGTYPE the key {key!r} holds a {found}, not the {kind} the queue keeps there")
    finally:
        client.close()


class StopAdding(Exception):
    """Raised by the homepages given to :meth:`SiteQueue.add` to stop it (Ctrl-C while the list
    is read): the batch read so far is not sent."""


class AddStopped(Exception):
    """:meth:`SiteQueue.add` was told to stop: ``new`` and ``already`` count what was sent."""

    def __init__(self, new: int, already: int) -> None:
        super().__init__(f"stopped after {new} new, {already} already there")
        self.new = new
        self.already = already


class SiteQueue:
    """One queue of sites on one server (see the module docstring)."""

    def __init__(self, config: QueueConfig, client: aioredis.Redis | None = None) -> None:
        self.config = config
        self.client = client or aioredis.Redis.from_url(
            config.url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT, health_check_interval=30
        )
        self.round_trips = 0
        """Commands and scripts sent (a pipeline counts once)."""
        self._add = self.client.register_script(_ADD)
        self._take = self.client.register_script(_TAKE)
        self._keep = self.client.register_script(_KEEP)
        self._ack = self.client.register_script(_ACK)
        self._own = self.client.register_script(_OWN)

    async def close(self) -> None:
        await self.client.aclose()

    async def ensure_group(self) -> None:
        """Create the stream and its consumer group unless they exist (reading from the first entry)."""
        self.round_trips += 1
        try:
            await self.client.xgroup_create(self.config.stream, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def add(
        self, homepages: Iterable[str], chunk: int = 1000, stopped: Callable[[], bool] | None = None
    ) -> tuple[int, int]:
        """Add homepages (normalised already); how many were new and how many were there before.

        ``stopped`` is asked after each batch sent (the last too): when it says so, or when
        the list raises :class:`StopAdding`, :class:`AddStopped` is raised (with the counts of
        the batches sent), the rest of the list left unread."""
        await self.ensure_group()
        new = already = 0
        batch: list[str] = []

        async def flush() -> None:
            nonlocal new, already
            pipe = self.client.pipeline(transaction=False)
            for homepage in batch:
                await self._add(keys=[self.config.seen, self.config.stream], args=[homepage], client=pipe)
            self.round_trips += 1
            for result in await pipe.execute():
                if int(result):
                    new += 1
                else:
                    already += 1
            batch.clear()

        try:
            for homepage in homepages:
                batch.append(homepage)
                if len(batch) >= chunk:
                    await flush()
                    if stopped is not None and stopped():
                        raise AddStopped(new, already)
        except StopAdding:
            raise AddStopped(new, already) from None  # (the list's reading was stopped: its batch not sent)
        if batch:
            await flush()
        if stopped is not None and stopped():
            raise AddStopped(new, already)
        return new, already

    async def take(self, consumer: str, count: int) -> tuple[list[Lease], int]:
        """Up to ``count`` sites for ``consumer``: silent ones claimed first, then new ones;
        and how many were dead-lettered on the way."""
        if count <= 0:
            return [], 0
        self.round_trips += 1
        config = self.config
        taken, dead = await self._take(
            keys=[config.stream, config.dead],
            args=[GROUP, consumer, config.claim_after_ms, count, config.max_attempts, int(time.time())],
        )
        leases = [
            Lease(_text(entry), _text(homepage), int(deliveries), _text(holder))
            for entry, homepage, deliveries, holder in taken
        ]
        return leases, int(dead)

    async def keep(self, consumer: str, entry_ids: Iterable[str]) -> list[str]:
        """Renew ``consumer``'s hold on its entries; the ids it no longer holds."""
        ids = list(entry_ids)
        if not ids:
            return []
        self.round_trips += 1
        lost = await self._keep(keys=[self.config.stream], args=[GROUP, consumer, *ids])
        return [_text(entry) for entry in lost]

    async def ack(self, consumer: str, done: Iterable[tuple[Lease, int, bool]]) -> list[Acknowledgement]:
        """Acknowledge ``consumer``'s finished sites ``(lease, pages, unreachable)`` in one round trip;
        what the server did with each. Only the attempt that holds a site is acknowledged, so a site
        is counted once, and its acknowledged attempt is its newest delivery."""
        pipe = self.client.pipeline(transaction=False)
        count = 0
        for lease, pages, unreachable in done:
            count += 1
            await self._ack(
                keys=[self.config.stream, self.config.counts],
                args=[GROUP, consumer, lease.entry_id, lease.deliveries, pages, "1" if unreachable else "0"],
                client=pipe,
            )
        if not count:
            return []
        self.round_trips += 1
        return [Acknowledgement(int(result)) for result in await pipe.execute()]

    async def own(self, consumer: str, leases: Iterable[Lease]) -> list[str]:
        """The entry that maps each lease's site (``lease.homepage`` as the worker reduced it): the
        lease's own entry, or another one, and then the lease, a duplicate, is acknowledged and
        counted as one (see ``_OWN``)."""
        args: list[str | int] = [GROUP, consumer]
        for lease in leases:
            args += [lease.entry_id, lease.deliveries, lease.homepage]
        if len(args) == 2:
            return []
        self.round_trips += 1
        config = self.config
        owners = await self._own(keys=[config.stream, config.homepages, config.counts], args=args)
        return [_text(owner) for owner in owners]

    async def idle(self) -> bool:
        """Whether the queue is drained: no entry waits and none is pending anywhere."""
        self.round_trips += 1
        info = await self._group_info()
        if info is None:
            return True
        pending = int(info.get("pending") or 0)
        lag = info.get("lag")
        if lag is None:  # Redis 6.2: no lag; the entries after the last delivered one
            after = await self.client.xrange(self.config.stream, f"({info['last-delivered-id']}", "+", count=1)
            waiting = len(after or ())
        else:
            waiting = int(lag)
        return pending == 0 and waiting == 0

    async def _group_info(self) -> dict[str, Any] | None:
        try:
            groups = await self.client.xinfo_groups(self.config.stream)
        except ResponseError:  # no such stream: nothing was ever added
            return None
        for group in groups:
            if _text(group.get("name")) == GROUP:
                return dict(group)
        return None

    async def status(self) -> QueueStatus:
        """The counts ``sitemaps-status`` shows."""
        config = self.config
        info = await self._group_info()
        pipe = self.client.pipeline(transaction=False)
        pipe.xlen(config.stream)
        pipe.hgetall(config.counts)
        pipe.xlen(config.dead)
        enqueued, counts, dead = await pipe.execute()
        workers: dict[str, int] = {}
        waiting: int | None = int(enqueued)
        in_flight = 0
        if info is not None:
            summary = await self.client.xpending(config.stream, GROUP)
            in_flight = int(summary.get("pending") or 0)
            for consumer in summary.get("consumers") or []:
                workers[_text(consumer["name"])] = int(consumer["pending"])
            lag = info.get("lag")
            waiting = None if lag is None else int(lag)
        return QueueStatus(
            enqueued=int(enqueued),
            waiting=waiting,
            in_flight=in_flight,
            workers=workers,
            done=int(counts.get("done", 0)),
            unreachable=int(counts.get("unreachable", 0)),
            dead=int(dead),
            pages=int(counts.get("pages", 0)),
            duplicates=int(counts.get("duplicates", 0)),
        )

    async def dead_letters(self, count: int = 100) -> list[dict[str, str | int]]:
        """The last dead-lettered sites, newest first (homepage, entry, reason: text;
        attempts, time: numbers)."""
        entries = await self.client.xrevrange(self.config.dead, "+", "-", count=count)
        return [_dead_letter(fields or {}) for _id, fields in entries or ()]


_NUMBERS = frozenset({"attempts", "time"})
"""The fields of a dead letter that are counts (the stream holds text)."""


def _dead_letter(fields: dict[Any, Any]) -> dict[str, str | int]:
    letter: dict[str, str | int] = {}
    for key, value in fields.items():
        name, text = _text(key), _text(value)
        letter[name] = int(text) if name in _NUMBERS and text.isdigit() else text
    return letter
