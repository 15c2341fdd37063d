"""U2: ``markdown.render`` gives the Dashboard full Markdown (CommonMark, GFM tables, highlighted code) as
HTML that stays inert whatever the model wrote. Each vector below is tried through the RPC; the count of
those that left anything active is 0."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from commons.jsonrpc import INVALID_PARAMS
from tests.gateway.live import LiveGateway, error_code

VECTORS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](jav&#x61;script:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](vbscript:msgbox(1))",
    "<javascript:alert(1)>",
    "![x](https://attacker.example/pixel.png)",
    '<svg onload="alert(1)">',
    '<iframe src="https://attacker.example"></iframe>',
    '<div style="background:url(javascript:alert(1))">x</div>',
    "```html\n<script>alert(1)</script>\n```",
    "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    '[x](https://ok.example "title" onmouseover="alert(1)")',
]
INERT_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li", "pre", "code",
    "em", "strong", "s", "del", "a", "table", "thead", "tbody", "tr", "th", "td", "span",
}  # fmt: skip


class _Active(HTMLParser):
    """What a browser would act on in this HTML: a tag outside the inert set, an event handler, a style,
    a source, or a link to anything but http(s)/mailto."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in INERT_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name in ("style", "src", "srcset", "formaction"):
                self.found.append(f"{tag}@{name}")
            if name == "href" and not re.match(r"(https?|mailto):", value or "", re.I):
                self.found.append(f"href={value}")


def active_parts(html: str) -> list[str]:
    parser = _Active()
    parser.feed(html)
    return parser.found


@pytest.fixture
def live(tmp_path: Path):
    with LiveGateway(tmp_path, serve=False) as gateway:
        yield gateway


def test_u2_markdown_renders_blocks_tables_and_highlighted_code(live: LiveGateway) -> None:
    text = "# Title\n\n- a\n- b\n\n| k | v |\n|:--|--:|\n| x | 1 |\n\n> said\n\n```python\nx = 1\n```\n\n~~old~~"
    (html,) = live.call("markdown.render", {"texts": [text]})["html"]
    assert "<h1>Title</h1>" in html
    assert "<ul>\n<li>a</li>\n<li>b</li>\n</ul>" in html
    assert '<th class="align-left">k</th>' in html
    assert '<td class="align-right">1</td>' in html
    assert "<blockquote>\n<p>said</p>\n</blockquote>" in html
    assert '<code class="language-python"><span class="n">x</span>' in html
    assert "<s>old</s>" in html


def test_u2_links_are_kept_safe_and_open_elsewhere(live: LiveGateway) -> None:
    (html,) = live.call("markdown.render", {"texts": ["[docs](https://example.com/a?b=1)"]})["html"]
    assert html == ('<p><a href="https://example.com/a?b=1" target="_blank" rel="noopener noreferrer">docs</a></p>\n')


def test_u2_model_markup_stays_inert(live: LiveGateway) -> None:
    rendered = live.call("markdown.render", {"texts": VECTORS})["html"]
    assert len(rendered) == len(VECTORS)
    active = {vector: active_parts(html) for vector, html in zip(VECTORS, rendered, strict=True) if active_parts(html)}
    print(f"markup escapes tried: {len(VECTORS)}, escapes that worked: {len(active)}")
    assert active == {}


def test_u2_render_refuses_too_many_texts_at_once(live: LiveGateway) -> None:
    assert error_code(lambda: live.call("markdown.render", {"texts": ["x"] * 201})) == INVALID_PARAMS
    assert error_code(lambda: live.call("markdown.render", {"texts": "not a list"})) == INVALID_PARAMS
