"""``web_fetch``: the text of one http(s) URL. Off unless the profile enables it (it reaches the network on
the model's say-so, SPEC M6).

The standard library does the fetching in a worker thread, with a deadline for the whole transfer (not only
per socket operation) and a cap on the bytes read. A cancelled call stops waiting at once, but the worker
thread finishes its current read (at most the socket timeout) before it ends.
"""

from __future__ import annotations

import asyncio
import http.client
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import IO

import msgspec

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome
from anyy.tools.builtin import Arguments, BuiltinTool, ToolFailure, object_schema
from anyy.tools.html_text import html_to_text
from anyy.tools.output import cap_text

MAX_BYTES = 2_000_000
FETCH_TIMEOUT = 30.0
USER_AGENT = "anyy-web-fetch/0.1"
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
        page = await asyncio.to_thread(_fetch, url, min(context.timeout, FETCH_TIMEOUT))
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


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects to http(s) only (the stock handler would also follow one to ftp://)."""

    def redirect_request(  # noqa: PLR0917 - urllib's signature
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise urllib.error.HTTPError(newurl, code, "redirect to a non-http(s) URL refused", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _is_text(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type in _TEXT_TYPES or content_type.endswith(("+json", "+xml"))


def _fetch(url: str, timeout: float) -> _Page:
    opener = urllib.request.build_opener(_HttpOnlyRedirects)
    headers = {"User-Agent": USER_AGENT, "Accept": "text/*, */*;q=0.5"}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - the caller checked: http(s) only
    deadline = time.monotonic() + timeout
    try:
        with opener.open(request, timeout=timeout) as response:
            content_type = response.headers.get_content_type()
            if not _is_text(content_type):
                raise ToolFailure(f"{url} is {content_type}, not text: web_fetch returns text only")
            chunks: list[bytes] = []
            size = 0
            while size <= MAX_BYTES:
                if time.monotonic() > deadline:
                    raise ToolFailure(f"fetching {url} took more than {timeout:g} s: stopped")
                chunk = response.read(min(65536, MAX_BYTES + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            body = b"".join(chunks)
            return _Page(
                url=response.geturl(),
                content_type=content_type,
                charset=response.headers.get_content_charset(),
                body=body[:MAX_BYTES],
                truncated=len(body) > MAX_BYTES,
            )
    except urllib.error.HTTPError as error:
        raise ToolFailure(f"{url} answered HTTP {error.code} {error.reason}") from None
    except urllib.error.URLError as error:
        raise ToolFailure(f"cannot fetch {url}: {error.reason}") from None
    except TimeoutError:
        raise ToolFailure(f"fetching {url} timed out after {timeout:g} s") from None
    except (http.client.HTTPException, OSError, ValueError) as error:
        raise ToolFailure(f"cannot fetch {url}: {error}") from None
