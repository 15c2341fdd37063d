"""Markdown to safe HTML for the Dashboard (SPEC U2): CommonMark with GFM tables and strikethrough
(markdown-it-py), code highlighted by Pygments (class names only, coloured by the Dashboard's style
sheet), then sanitised by an allow-list (nh3, the Rust ammonia sanitiser).

Model output is untrusted. Three layers keep it inert: raw HTML in the Markdown is escaped (``html``
off), links other than http(s)/mailto stay text (markdown-it's link validation), and the sanitiser drops
any tag, attribute or URL scheme outside its lists whatever the renderer produced. The libraries are
imported on first use: a Gateway that never serves the Dashboard never loads them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import Any

# What the Dashboard shows: blocks and inline marks of CommonMark + GFM tables, nothing active.
_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li", "pre", "code",
    "em", "strong", "s", "del", "a", "table", "thead", "tbody", "tr", "th", "td", "span",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "ol": {"start"},
    "th": {"class"},
    "td": {"class"},
}
# The Dashboard's Content Security Policy refuses inline styles: a table column's alignment is a class.
_ALIGN = {"text-align:left": "align-left", "text-align:center": "align-center", "text-align:right": "align-right"}
_SCHEMES = {"http", "https", "mailto"}


@cache
def _renderer() -> Callable[[str], str]:
    import nh3
    from markdown_it import MarkdownIt
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    formatter = HtmlFormatter(nowrap=True)

    def highlight_code(code: str, language: str, _attrs: Any) -> str:
        if not language:
            return ""  # markdown-it escapes it as plain code
        try:
            lexer = get_lexer_by_name(language.split(maxsplit=1)[0])
        except ClassNotFound:
            return ""
        return str(highlight(code, lexer, formatter))

    # Images are not rendered: a model's image link would make the browser fetch an address it chose.
    markdown = (
        MarkdownIt("commonmark", {"html": False, "highlight": highlight_code})
        .enable(["table", "strikethrough"])
        .disable("image")
    )
    cleaner = nh3.Cleaner(
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_SCHEMES,
        link_rel="noopener noreferrer",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )

    def render(text: str) -> str:
        env: dict[str, Any] = {}
        tokens = markdown.parse(text, env)
        for token in tokens:
            style = token.attrs.pop("style", None) if token.type in ("th_open", "td_open") else None
            if isinstance(style, str) and style in _ALIGN:
                token.attrSet("class", _ALIGN[style])
        return str(cleaner.clean(markdown.renderer.render(tokens, markdown.options, env)))

    return render


def render_markdown(text: str) -> str:
    """The safe HTML of one message's Markdown."""
    return _renderer()(text)


_warming = threading.Event()


def warm_up() -> None:
    """Load the renderer in a background thread (once): called when the Dashboard's page is served, so
    that its first ``markdown.render`` does not wait for the libraries' import (~0.1-0.4 s)."""
    if not _warming.is_set():
        _warming.set()
        threading.Thread(target=_renderer, name="markdown-warm-up", daemon=True).start()
