"""A DNS resolver for crawl tests: host names ending in ``.test`` are 127.0.0.1, every
other name fails as a lookup failure, and nothing is asked of the network.

    settings = {"TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver"}

Scrapy keys its download slots by host name, so many such names give many hosts on
one machine (each with its own politeness), all served by one fixture server that
answers by the Host header.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

LOOPBACK_SUFFIX = ".test"


@implementer(IResolverSimple)
class LoopbackResolver:
    """``*.test`` (and IP literals) resolve to themselves on loopback; anything else fails."""

    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> LoopbackResolver:
        return cls(reactor)

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:  # noqa: N802 - Twisted's name
        try:
            return defer.succeed(str(ipaddress.ip_address(name)))
        except ValueError:
            pass
        if name.lower().endswith(LOOPBACK_SUFFIX):
            return defer.succeed("127.0.0.1")
        return defer.fail(DNSLookupError(f"{name} is not a test host name"))
