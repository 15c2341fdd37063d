"""Rendering for clients that show HTML (the Dashboard): a message's Markdown as safe HTML."""

from __future__ import annotations

import asyncio

from anyy.api import methods as api
from anyy.api.gateway import RenderResult
from anyy.api.params import RenderParams
from anyy.domain.errors import InvalidInput
from anyy.gateway.markdown_html import render_markdown
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE

MAX_TEXTS = 200  # one page of history, and then some


@TABLE.method(api.MARKDOWN_RENDER)
async def render(gw: Gateway, conn: Connection | None, p: RenderParams) -> RenderResult:
    """Each text's Markdown (CommonMark, GFM tables and strikethrough, highlighted code) as sanitised HTML,
    in order: raw HTML is escaped, only http(s) and mailto links are kept, images stay text. At most 200
    texts per call."""
    if len(p.texts) > MAX_TEXTS:
        raise InvalidInput(f"at most {MAX_TEXTS} texts per call (got {len(p.texts)}): send them in batches")
    html = await asyncio.to_thread(lambda: [render_markdown(text) for text in p.texts])
    return RenderResult(html=html)
