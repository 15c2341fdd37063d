"""The ``base_url`` of a provider, written either way by people: with or without the trailing ``/v1``.

The two SDKs disagree: OpenAI's appends ``/chat/completions`` to a base that must end in ``/v1`` (or the
server's own API prefix), Anthropic's appends ``/v1/messages`` to the bare host. A person copying a URL
from a server's docs writes one form or the other, so both are accepted for both kinds (once anyy asked
for ``/v1/v1/messages``): for an OpenAI-compatible server a base with no path gets ``/v1``; for
Anthropic a trailing ``/v1`` is dropped. Any other path is the server's own and is kept.
"""

from __future__ import annotations

import urllib.parse

V1 = "/v1"


def openai_base_url(url: str) -> str:
    """``http://host:port`` and ``http://host:port/v1`` both mean ``http://host:port/v1``."""
    url = url.rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.path in ("", "/"):
        return url + V1
    return url


def anthropic_base_url(url: str) -> str:
    """``https://api.anthropic.com/v1`` and ``https://api.anthropic.com`` both mean the latter."""
    url = url.rstrip("/")
    return url.removesuffix(V1) if url.endswith(V1) else url
