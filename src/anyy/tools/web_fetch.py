"""``web_fetch``: the text of one http(s) URL. Off unless the profile enables it (it reaches the network on
the model's say-so, SPEC M6).

Every hop (the URL, then each redirect, at most ``MAX_REDIRECTS``) is resolved and checked by
:mod:`anyy.tools.addresses` -- public addresses only unless the profile allows others -- and the connection
goes to the checked address, with the host name kept for the Host header and TLS (SN3). The standard
library's ``http.client`` does the fetching in a worker thread. The deadline covers the whole transfer:
each socket operation waits at most the time left, and when the deadline passes the socket is shut down
from outside, so a server that dribbles one byte at a time cannot hold the call past it.

Behind a proxy (``http_proxy`` / ``https_proxy`` in the Gateway's environment, ``no_proxy`` honoured, as
curl and Python read them), the target is still resolved and checked here, and the proxy is asked for the
checked *address*: ``CONNECT 93.184.216.34:443`` for https (TLS then runs end to end with the host name),
an absolute ``http://93.184.216.34/...`` request with the name in ``Host`` for http. So a proxy opens no
door the policy closes, and a DNS answer that changes cannot lead elsewhere. The proxy's own address is the
user's choice and is not checked. Only ``http://`` proxies are spoken to (with ``user:password@`` as Basic
authentication).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request

import msgspec

from anyy.domain.model_io import ToolSpec
from anyy.tools.addresses import IPAddress, resolve
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, ToolFailure, object_schema
from anyy.tools.html_text import html_to_text
from anyy.tools.output import cap_text

MAX_BYTES = 2_000_000
FETCH_TIMEOUT = 30.0
USER_AGENT = "anyy-web-fetch/0.1"
MAX_REDIRECTS = 5
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/xhtml+xml")


class WebFetchTool(BuiltinTool):
    spec = ToolSpec(
        name="web_fetch",
        description=(
            "Fetch one http or https URL and return its text: HTML pages are reduced to their readable text, "
            "other text formats (plain text, JSON, XML...) are returned as they are. Binary content (images, "
            "PDF, archives) is refused. Long pages keep their start and end, with a note of what was cut."
        ),
        parameters=object_schema(
            {"url": {"type": "string", "description": "An absolute http:// or https:// URL."}},
            required=("url",),
        ),
    )

    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        url = args.string("url").strip()
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolFailure(f"web_fetch takes an absolute http:// or https:// URL, not {url!r}")
        timeout = min(context.timeout, FETCH_TIMEOUT)
        fetch = _Fetch(url, timeout, allow_private=context.policy.allow_private_network)
        worker = asyncio.create_task(asyncio.to_thread(fetch.run))
        worker.add_done_callback(lambda task: task.cancelled() or task.exception())  # seen, never logged
        try:
            page = await asyncio.wait_for(asyncio.shield(worker), timeout)
        except TimeoutError:
            fetch.abort()  # the worker's blocked read fails at once; its outcome is not wanted
            raise ToolFailure(f"fetching {url} timed out after {timeout:g} s: stopped") from None
        finally:
            if not worker.done():
                fetch.abort()
        try:
            text = page.body.decode(page.charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know: UTF-8 is the likeliest truth
            text = page.body.decode("utf-8", errors="replace")
        if page.content_type in ("text/html", "application/xhtml+xml"):
            text = html_to_text(text)
        cut = f", only the first {MAX_BYTES} bytes were read" if page.truncated else ""
        header = f"[{page.url} ({page.content_type}, {len(page.body)} bytes{cut})]\n\n"
        return ToolOutcome(text=header + cap_text(text, max(context.output_cap - len(header), 0)))


class _Page(msgspec.Struct, frozen=True):
    url: str
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool


def _is_text(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type in _TEXT_TYPES or content_type.endswith(("+json", "+xml"))


class _Proxy(msgspec.Struct, frozen=True):
    host: str
    port: int
    authorization: str | None  # a Proxy-Authorization header's value


def _proxy_for(scheme: str, host: str) -> _Proxy | None:
    """The proxy the environment names for ``scheme`` (``None``: go direct, or ``no_proxy`` covers ``host``)."""
    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass(host):  # no_proxy (on Linux, from the environment)
        return None
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise ToolFailure(f"web_fetch speaks to http:// proxies only; the environment names {parts.scheme}://")
    authorization = None
    if parts.username is not None:
        secret = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(secret.encode()).decode()
    return _Proxy(host=parts.hostname, port=parts.port or 80, authorization=authorization)


def _authority(address: IPAddress, port: int) -> str:
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to an address checked beforehand (directly, or through a proxy that is asked
    for that address); the URL's host name is the Host header."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float, proxy: _Proxy | None) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address
        self.proxy = proxy
        # Kept here: http.client hands the socket to the response (and forgets it) when the server closes.
        self.held: socket.socket | None = None

    def target(self, path: str) -> str:
        """What the request line names: the path, or through a proxy the absolute URL of the address."""
        return f"http://{_authority(self._address, self.port)}{path}" if self.proxy else path

    def connect(self) -> None:
        where = (self.proxy.host, self.proxy.port) if self.proxy else (str(self._address), self.port)
        self.sock = self.held = socket.create_connection(where, self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPS(_PinnedHTTP):
    default_port = http.client.HTTPS_PORT

    def target(self, path: str) -> str:
        return path  # the tunnel leads to the address: the request inside it is an ordinary one

    def connect(self) -> None:
        super().connect()
        if self.proxy is not None:
            self._open_tunnel(self.proxy)
        context = ssl.create_default_context()
        self.sock = self.held = context.wrap_socket(self.sock, server_hostname=self.host)

    def _open_tunnel(self, proxy: _Proxy) -> None:
        authority = _authority(self._address, self.port)
        lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
        if proxy.authorization:
            lines.append(f"Proxy-Authorization: {proxy.authorization}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("ascii"))
        head = b""
        while b"\r\n\r\n" not in head:  # byte by byte: nothing after the head may be consumed (TLS follows)
            byte = self.sock.recv(1)
            if not byte or len(head) > 65536:
                raise OSError(0, f"the proxy {proxy.host}:{proxy.port} closed the tunnel request")
            head += byte
        status = head.split(b"\r\n", 1)[0].decode("latin-1")
        if status.split(" ")[1:2] != ["200"]:
            raise ToolFailure(f"the proxy {proxy.host}:{proxy.port} refused the tunnel to {authority}: {status}")


class _Fetch:
    """One fetch, run in a worker thread; :meth:`abort` (from any thread) ends it at once."""

    def __init__(self, url: str, timeout: float, *, allow_private: bool) -> None:
        self.url = url
        self.timeout = timeout
        self.allow_private = allow_private
        self.deadline = time.monotonic() + timeout
        self._lock = threading.Lock()
        self._connection: _PinnedHTTP | None = None
        self._aborted = False

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            connection = self._connection
        if connection is not None and connection.held is not None:
            with contextlib.suppress(OSError):
                connection.held.shutdown(socket.SHUT_RDWR)

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or self._aborted:
            raise ToolFailure(f"fetching {self.url} timed out after {self.timeout:g} s: stopped")
        return left

    def run(self) -> _Page:
        url = self.url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                outcome = self._hop(url)
                if isinstance(outcome, _Page):
                    return outcome
                url = outcome
            raise ToolFailure(f"{self.url} redirected more than {MAX_REDIRECTS} times: stopped")
        except ToolFailure:
            raise
        except TimeoutError:
            raise ToolFailure(f"fetching {self.url} timed out after {self.timeout:g} s") from None
        except (http.client.HTTPException, OSError, ValueError) as error:
            if self._aborted or time.monotonic() >= self.deadline:
                raise ToolFailure(f"fetching {self.url} timed out after {self.timeout:g} s: stopped") from None
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise ToolFailure(f"cannot fetch {url}: {reason}") from None

    def _hop(self, url: str) -> _Page | str:
        """The page at ``url``, or the URL it redirects to."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolFailure(f"{self.url}: redirect to a non-http(s) URL refused ({url})")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = resolve(parts.hostname, port, allow_private=self.allow_private)
        kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
        proxy = _proxy_for(parts.scheme, parts.hostname)
        connection = kind(parts.hostname, port, addresses[0], self._left(), proxy)
        with self._lock:
            if self._aborted:
                raise ToolFailure(f"fetching {self.url} timed out after {self.timeout:g} s: stopped")
            self._connection = connection
        try:
            path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
            headers = {"User-Agent": USER_AGENT, "Accept": "text/*, */*;q=0.5"}
            if connection.proxy is not None and parts.scheme == "http":
                headers["Host"] = parts.netloc.rpartition("@")[2]  # the name: the request line holds the address
                if connection.proxy.authorization:
                    headers["Proxy-Authorization"] = connection.proxy.authorization
            connection.request("GET", connection.target(path), headers=headers)
            if connection.held is not None:
                connection.held.settimeout(self._left())
            response = connection.getresponse()
            location = response.getheader("Location")
            if response.status in (301, 302, 303, 307, 308) and location:
                return urllib.parse.urljoin(url, location)
            if response.status >= 400:
                raise ToolFailure(f"{url} answered HTTP {response.status} {response.reason}")
            content_type = response.headers.get_content_type()
            if not _is_text(content_type):
                raise ToolFailure(f"{url} is {content_type}, not text: web_fetch returns text only")
            body, truncated = self._read(connection, response)
            return _Page(
                url=url,
                content_type=content_type,
                charset=response.headers.get_content_charset(),
                body=body,
                truncated=truncated,
            )
        finally:
            connection.close()

    def _read(self, connection: _PinnedHTTP, response: http.client.HTTPResponse) -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BYTES:
            if connection.held is not None:
                connection.held.settimeout(self._left())
            # read1: at most one receive, so that every wait is bounded by the time left.
            chunk = response.read1(min(65536, MAX_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        body = b"".join(chunks)
        return body[:MAX_BYTES], len(body) > MAX_BYTES
