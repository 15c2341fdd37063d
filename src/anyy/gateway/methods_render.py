"""Rendering for clients that show HTML (the Dashboard): a message's Markdown as safe HTML."""

from __future__ import annotations

import asyncio

import msgspec

from anyy.domain.errors import InvalidInput
from anyy.gateway.markdown_html import render_markdown
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE, Params

MAX_TEXTS = 200  # one page of history, and then some


class RenderParams(Params):
    texts: list[str]


class RenderResult(msgspec.Struct, kw_only=True):
    html: list[str]


@TABLE.method("markdown.render", RenderParams)
async def render(gw: Gateway, conn: Connection | None, p: RenderParams) -> RenderResult:
    """Each text's Markdown (CommonMark, GFM tables and strikethrough, highlighted code) as sanitised HTML,
    in order: raw HTML is escaped, only http(s) and mailto links are kept, images stay text. At most 200
    texts per call."""
    if len(p.texts) > MAX_TEXTS:
        raise InvalidInput(f"at most {MAX_TEXTS} texts per call (got {len(p.texts)}): send them in batches")
    html = await asyncio.to_thread(lambda: [render_markdown(text) for text in p.texts])
    return RenderResult(html=html)
