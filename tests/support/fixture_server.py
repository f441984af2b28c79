"""A real HTTP/1.1 server on 127.0.0.1 serving a "fixture site" described in Python.

    site = FixtureServer({
        "/robots.txt": Route("Sitemap: {base}/sitemap.xml\n"),
        "/sitemap.xml": Route(urlset("{base}/a", "{base}/b")),
        "/old.xml": Route(redirect_to="/sitemap.xml"),
    })
    with site:
        ...  # site.base == "http://127.0.0.1:PORT", site.hits("/sitemap.xml") == 1

Routes are keyed by the raw request target (path plus query string, exactly as
the client sends it). ``{base}`` in a str body, a redirect target or a header
value is replaced by the base URL at request time; bytes bodies are left
alone unless ``format_bytes=True``. Unknown paths answer 404.

For big crawls (hundreds of thousands of pages) give the site a page prefix:

    site = FixtureServer(pages="/p/")   # every GET /p/... answers PAGE_BODY

Those requests take a fast path (no header parsing, not recorded): they are only
counted, in ``site.page_hits``. Sitemaps are served as routes, as usual.
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any, Protocol, Self
from urllib.parse import urlsplit

__all__ = [
    "PAGE_BODY",
    "FixtureServer",
    "RecordedRequest",
    "Route",
    "RouteLike",
    "SiteFactory",
    "guess_content_type",
]

BASE_PLACEHOLDER = "{base}"
PORT_PLACEHOLDER = "{port}"

NOT_FOUND_BODY = (
    b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n"
)
"""Body of the 404 answer for an unknown path."""

PAGE_BODY = b"<!DOCTYPE html><html><head><title>page</title></head><body>ok</body></html>"
"""Body of every generated page (a path under the site's ``pages`` prefix)."""

_PAGE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n" % len(PAGE_BODY)
_PAGE_RESPONSE = _PAGE_HEAD + b"\r\n" + PAGE_BODY
_PAGE_RESPONSE_CLOSE = _PAGE_HEAD + b"Connection: close\r\n\r\n" + PAGE_BODY

# Client-side disconnects (reset, broken pipe, timeout: all OSError) are part of what the
# tests exercise; they are not errors of the harness.
_QUIET_ERRORS = (OSError,)


@dataclass
class Route:
    """How the fixture server answers one path.

    body: bytes or str (str is UTF-8 encoded after ``{base}`` substitution).
    status: HTTP status; defaults to 200, or 301 when ``redirect_to`` is set.
    headers: extra response headers; they override the defaults of the same name
        (a ``Content-Length`` given here is sent as is, even if it lies).
    content_type: the Content-Type; None guesses from the path
        (see :func:`guess_content_type`), "" sends no Content-Type at all.
    redirect_to: Location (relative or absolute, ``{base}`` allowed); the status
        defaults to 301, pass ``status=302`` (or 303/307/308) for another.
    delay: seconds to wait before answering (after the request is recorded).
    trickle: ``(n, t)``: send the body n bytes at a time, sleeping t seconds
        between pieces; without ``chunked`` there is no Content-Length and the
        connection is closed after the body (Scrapy then flags the response
        "partial"; add ``chunked=True`` for a slow body that is known complete).
    chunked: send the body with ``Transfer-Encoding: chunked`` (keeps keep-alive;
        one chunk, or one per trickle piece).
    gzip_encoding: gzip the (rendered) body and send ``Content-Encoding: gzip``.
    gzip_file: gzip the (rendered) body and send it as is, with no Content-Encoding:
        a ``.gz`` file whose content may still use ``{base}``.
    drop_connection: close the socket without sending any response. Combined with
        ``fail_times=N``, only the first N requests are dropped.
    drop_after: announce the full Content-Length, send only this many body bytes,
        then close the connection (a body that breaks off). Combined with
        ``fail_times=N``, only the first N answers break off, the next ones are whole.
    fail_times: answer ``fail_status`` (503) to the first N requests of this path,
        then answer normally.
    format_bytes: also substitute ``{base}`` in a bytes body.
    etag / last_modified: validators sent with the body (``ETag``, ``Last-Modified``); a
        request whose ``If-None-Match`` equals the ETag, or (without If-None-Match) whose
        ``If-Modified-Since`` equals Last-Modified, gets 304 Not Modified and no body.
    """

    body: bytes | str = b""
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    redirect_to: str | None = None
    delay: float = 0.0
    trickle: tuple[int, float] | None = None
    chunked: bool = False
    gzip_encoding: bool = False
    gzip_file: bool = False
    drop_connection: bool = False
    drop_after: int | None = None
    fail_times: int = 0
    fail_status: int = 503
    format_bytes: bool = False
    etag: str | None = None
    last_modified: str | None = None

    def __post_init__(self) -> None:
        if self.trickle is not None and (self.trickle[0] < 1 or self.trickle[1] < 0):
            raise ValueError(f"trickle must be (bytes >= 1, seconds >= 0), got {self.trickle!r}")
        if self.fail_times < 0:
            raise ValueError("fail_times must be >= 0")

    @property
    def effective_status(self) -> int:
        if self.status is not None:
            return self.status
        return 301 if self.redirect_to is not None else 200


RouteLike = Route | str | bytes
"""A Route, or a bare body served as ``Route(body)``."""


def _as_route(value: RouteLike) -> Route:
    return value if isinstance(value, Route) else Route(body=value)


def guess_content_type(path: str) -> str:
    """text/plain for .txt, application/xml for .xml, application/x-gzip for .gz, text/html otherwise
    (judged on the path without its query string)."""
    name = urlsplit(path).path.lower()
    if name.endswith(".txt"):
        return "text/plain"
    if name.endswith(".xml"):
        return "application/xml"
    if name.endswith(".gz"):
        return "application/x-gzip"
    return "text/html"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. ``time`` is ``time.monotonic()``."""

    method: str
    path: str
    headers: dict[str, str]
    time: float

    def header(self, name: str, default: str | None = None) -> str | None:
        """Case-insensitive header lookup."""
        wanted = name.lower()
        for key, value in self.headers.items():
            if key.lower() == wanted:
                return value
        return default


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], site: FixtureServer) -> None:
        self.site = site
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup that can
        # stall on a machine without network; the name is not needed.
        TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        with self._connections_lock:
            self._connections.add(sock)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Wake every handler thread still blocked on a (keep-alive) connection."""
        with self._connections_lock:
            connections = list(self._connections)
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Never print: a client hanging up mid-body is expected. Anything else is kept
        # in site.errors so a test can assert the harness itself did not fail.
        error = sys.exc_info()[1]
        if isinstance(error, _QUIET_ERRORS):
            return
        self.site._record_error(traceback.format_exc())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 30  # an idle keep-alive connection is dropped after this many seconds
    server: _HTTPServer

    def log_message(self, *_args: Any) -> None:
        pass

    def handle_one_request(self) -> None:
        if self.server.site._page_marker is None or not self._serve_generated_page():
            super().handle_one_request()

    def _serve_generated_page(self) -> bool:
        """The fast path: a ``GET`` of a generated page, seen by peeking at the buffered
        request; False (nothing consumed) for any other request, served the usual way."""
        marker = self.server.site._page_marker
        assert marker is not None
        try:
            if not self.rfile.peek(len(marker)).startswith(marker):  # type: ignore[attr-defined]
                return False
            self.close_connection = False  # HTTP/1.1 keep-alive, unless the client says otherwise
            while (line := self.rfile.readline(65537)) not in (b"\r\n", b"\n"):
                if not line or (line[:11].lower() == b"connection:" and b"close" in line.lower()):
                    self.close_connection = True
                    if not line:
                        return True
            self.server.site._count_page()
            self.wfile.write(_PAGE_RESPONSE_CLOSE if self.close_connection else _PAGE_RESPONSE)
        except TimeoutError:
            self.close_connection = True
        return True

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _serve(self, *, head: bool) -> None:
        try:
            self._discard_request_body()
            self._answer(head=head)
            self.wfile.flush()
        except _QUIET_ERRORS:
            self.close_connection = True

    def _discard_request_body(self) -> None:
        length = self.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > 0:
            self.rfile.read(int(length))

    def _answer(self, *, head: bool) -> None:
        site = self.server.site
        site._record(RecordedRequest(self.command, self.path, dict(self.headers.items()), time.monotonic()))
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
        route = site.routes.get(f"//{host}{self.path}") or site.routes.get(self.path)
        with site._condition:
            in_flight = site.in_flight[host] = site.in_flight.get(host, 0) + 1
            site.most_in_flight[host] = max(site.most_in_flight.get(host, 0), in_flight)
            site.most_in_flight_in_all = max(site.most_in_flight_in_all, sum(site.in_flight.values()))
        self._in_flight_host: str | None = host
        try:
            self._answer_route(route, host, head=head)
        finally:
            self._answered()

    def _answered(self) -> None:
        """The request no longer counts as in flight: called just before the response's last
        bytes go out (once the client has them, it may send the next request at once, before
        this thread would get round to it)."""
        host, self._in_flight_host = self._in_flight_host, None
        if host is not None:
            site = self.server.site
            with site._condition:
                site.in_flight[host] -= 1

    def _answer_route(self, route: Route | None, host: str, *, head: bool) -> None:
        site = self.server.site
        if site.pages is not None and self.path.startswith(site.pages):
            site._count_page()
            route = Route(PAGE_BODY, content_type="text/html")
        if route is None:
            self._send(404, NOT_FOUND_BODY, [("Content-Type", "text/html")], head=head)
            return
        if route.delay > 0:
            time.sleep(route.delay)
        failing = site._count_attempt(self.path, route)
        if route.drop_connection and (failing or route.fail_times == 0):
            self.close_connection = True
            return
        if route.drop_after is not None and route.fail_times:
            self._send_route(route, head=head, drop_after=route.drop_after if failing else None)
            return
        if failing:
            body = f"<html><body><h1>{route.fail_status}</h1></body></html>\n".encode()
            self._send(route.fail_status, body, [("Content-Type", "text/html")], head=head)
            return
        validators = [
            (name, value) for name, value in (("ETag", route.etag), ("Last-Modified", route.last_modified)) if value
        ]
        if validators and self._not_modified(route):
            self._send(304, b"", [*validators, ("Content-Length", "0")], head=True)
            return
        self._send_route(route, head=head, drop_after=route.drop_after)

    def _not_modified(self, route: Route) -> bool:
        """Whether the request's conditional headers match the route's validators."""
        match = self.headers.get("If-None-Match")
        if match is not None:
            return route.etag is not None and route.etag in [tag.strip() for tag in match.split(",")]
        since = self.headers.get("If-Modified-Since")
        return since is not None and route.last_modified is not None and since == route.last_modified

    def _send_route(self, route: Route, *, head: bool, drop_after: int | None) -> None:
        """Answer with the route's body, broken off after ``drop_after`` bytes if not None."""
        site = self.server.site
        body = site.render(route.body, format_bytes=route.format_bytes)
        if route.gzip_file:
            body = gzip.compress(body, mtime=0)
        headers: list[tuple[str, str]] = []
        content_type = route.content_type if route.content_type is not None else guess_content_type(self.path)
        if content_type:
            headers.append(("Content-Type", content_type))
        if route.redirect_to is not None:
            headers.append(("Location", site.format(route.redirect_to)))
        if route.gzip_encoding:
            body = gzip.compress(body, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        if route.etag:
            headers.append(("ETag", route.etag))
        if route.last_modified:
            headers.append(("Last-Modified", route.last_modified))
        overridden = {name.lower() for name in route.headers}
        headers = [(name, value) for name, value in headers if name.lower() not in overridden]
        headers.extend((name, site.format(value)) for name, value in route.headers.items())
        self._send(
            route.effective_status,
            body,
            headers,
            head=head,
            trickle=route.trickle,
            chunked=route.chunked,
            drop_after=drop_after,
        )

    def _send(
        self,
        status: int,
        body: bytes,
        headers: list[tuple[str, str]],
        *,
        head: bool,
        trickle: tuple[int, float] | None = None,
        chunked: bool = False,
        drop_after: int | None = None,
    ) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        has_length = any(name.lower() == "content-length" for name, _ in headers)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif trickle is not None:
            self.send_header("Connection", "close")  # the body ends when the connection does
        elif not has_length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        if drop_after is not None:
            self.wfile.write(body[:drop_after])
            self.close_connection = True
            return
        size, interval = trickle if trickle is not None else (max(len(body), 1), 0.0)
        for start in range(0, len(body), size):
            if start and interval:
                time.sleep(interval)
            piece = body[start : start + size]
            if start + size >= len(body) and not chunked:
                self._answered()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            self._answered()
            self.wfile.write(b"0\r\n\r\n")


class FixtureServer:
    """A fixture web site on 127.0.0.1 with an ephemeral port; a context manager.

    ``routes`` maps a request target (``"/robots.txt"``, ``"/sitemap.xml?page=2"``) to a
    :class:`Route`, or to a bare str/bytes body (a 200 ``Route``). A key
    ``"//shop.test/robots.txt"`` answers only requests whose Host is ``shop.test``
    (virtual hosts: see :mod:`tests.support.dns`); ``most_in_flight`` says, by Host, how
    many requests were in flight at once at most. Routes may be added,
    replaced or deleted while the server runs (``site["/x"] = Route(...)``, ``del site["/x"]``).
    ``pages``: a path prefix (``"/p/"``) under which every path (no route may be there) is a
    generated page (:data:`PAGE_BODY`); a GET of one takes the fast path and is counted
    in ``page_hits`` instead of being recorded.
    """

    def __init__(
        self,
        routes: Mapping[str, RouteLike] | None = None,
        *,
        host: str = "127.0.0.1",
        pages: str | None = None,
    ) -> None:
        if pages is not None and not pages.startswith("/"):
            raise ValueError(f"the pages prefix starts with '/': {pages!r}")
        self.pages = pages
        self.routes: dict[str, Route] = {}
        for path, route in (routes or {}).items():
            self[path] = route
        self.host = host
        self._page_marker = None if pages is None else b"GET " + pages.encode("latin-1")
        self._page_hits = 0
        self.in_flight: dict[str, int] = {}
        self.most_in_flight: dict[str, int] = {}
        """The largest number of requests seen in flight at once, by Host (virtual hosts)."""
        self.most_in_flight_in_all = 0
        """The largest number of requests seen in flight at once, all hosts together (one IP)."""
        self.errors: list[str] = []
        self._requests: list[RecordedRequest] = []
        self._attempts: dict[str, int] = {}
        self._condition = threading.Condition()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # -- routes -------------------------------------------------------------------------

    def __setitem__(self, path: str, route: RouteLike) -> None:
        if not path.startswith("/"):
            raise ValueError(f"route paths start with '/': {path!r}")
        if self.pages is not None and path.startswith(self.pages):
            raise ValueError(f"{path!r} is under the generated pages prefix {self.pages!r}")
        self.routes[path] = _as_route(route)

    def __getitem__(self, path: str) -> Route:
        return self.routes[path]

    def __delitem__(self, path: str) -> None:
        del self.routes[path]

    def add(self, path: str, route: RouteLike) -> Self:
        self[path] = route
        return self

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            return self
        server = _HTTPServer((self.host, 0), self)
        self._server = server
        self._port = server.server_port
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fixture-site-{server.server_port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- addresses ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The ephemeral port; still known after stop() (for assertions and late handlers)."""
        if self._port is None:
            raise RuntimeError("the fixture server has not been started")
        return self._port

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        """Absolute URL of a path on this site: ``site.url("/sitemap.xml")``."""
        return self.base + (path if path.startswith("/") else "/" + path)

    def format(self, text: str) -> str:
        """Replace ``{base}`` in text by the base URL and ``{port}`` by the port."""
        return text.replace(BASE_PLACEHOLDER, self.base).replace(PORT_PLACEHOLDER, str(self.port))

    def render(self, body: bytes | str, *, format_bytes: bool = False) -> bytes:
        """The bytes a route body is sent as."""
        if isinstance(body, str):
            return self.format(body).encode("utf-8")
        if format_bytes:
            return body.replace(BASE_PLACEHOLDER.encode(), self.base.encode()).replace(
                PORT_PLACEHOLDER.encode(), str(self.port).encode()
            )
        return body

    # -- what was asked -----------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._condition:
            return list(self._requests)

    def requests_for(self, path: str, method: str | None = None) -> list[RecordedRequest]:
        """The requests of ``path`` (exact request target, or an absolute URL on this site)."""
        if path.startswith(self.base):
            path = path[len(self.base) :] or "/"
        return [r for r in self.requests if r.path == path and (method is None or r.method == method)]

    def hits(self, path: str, method: str | None = None) -> int:
        """How many times ``path`` (exact request target, or an absolute URL on this site) was requested."""
        return len(self.requests_for(path, method))

    @property
    def page_hits(self) -> int:
        """How many generated pages (under the ``pages`` prefix) were requested."""
        with self._condition:
            return self._page_hits

    def paths(self) -> list[str]:
        """Requested paths in arrival order (with repeats)."""
        return [r.path for r in self.requests]

    def wait_for(self, path: str, count: int = 1, timeout: float = 10.0) -> bool:
        """Block until ``path`` has been requested ``count`` times; False on timeout."""

        def enough() -> bool:
            return sum(1 for r in self._requests if r.path == path) >= count

        with self._condition:
            return self._condition.wait_for(enough, timeout=timeout)

    def reset(self) -> None:
        """Forget recorded requests, harness errors, fail_times counters and page hits."""
        with self._condition:
            self._requests.clear()
            self._attempts.clear()
            self.errors.clear()
            self._page_hits = 0

    # -- called by the handler threads --------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._condition:
            self._requests.append(request)
            self._condition.notify_all()

    def _count_page(self) -> None:
        with self._condition:
            self._page_hits += 1

    def _record_error(self, text: str) -> None:
        with self._condition:
            self.errors.append(text)

    def _count_attempt(self, path: str, route: Route) -> bool:
        """Count one request of a path; True while it is within the route's fail_times."""
        with self._condition:
            attempt = self._attempts.get(path, 0)
            self._attempts[path] = attempt + 1
        return attempt < route.fail_times


class SiteFactory(Protocol):
    """The type of the ``fixture_site`` fixture: routes in, a started FixtureServer out."""

    def __call__(self, routes: Mapping[str, RouteLike] | None = None) -> FixtureServer: ...


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
