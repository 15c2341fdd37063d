"""``base_url`` with or without ``/v1`` reaches the same endpoint, for both provider kinds (anyy once
requested ``/v1/v1/messages``): real SDK calls against the fake model server on loopback."""

from __future__ import annotations

import pytest

from tests.fakes.model_server import FakeModelServer, Reply
from tests.providers.support import request, stream_all, text_of


@pytest.mark.parametrize(
    ("api", "suffix", "path"),
    [
        ("openai", "", "/v1/chat/completions"),
        ("openai", "/v1", "/v1/chat/completions"),
        ("openai", "/v1/", "/v1/chat/completions"),
        ("anthropic", "", "/v1/messages"),
        ("anthropic", "/v1", "/v1/messages"),
        ("anthropic", "/v1/", "/v1/messages"),
    ],
)
async def test_u4_base_url_works_with_and_without_v1(fake: FakeModelServer, api: str, suffix: str, path: str) -> None:
    fake.enqueue(Reply(text=["reached"]))
    base = f"http://127.0.0.1:{fake.port}{suffix}"
    events = await stream_all(api, fake, request(), base_url=base)
    assert text_of(events) == "reached"
    assert [r.path for r in fake.received] == [path]


def test_u4_a_servers_own_api_prefix_is_kept() -> None:
    from anyy.providers.base_urls import anthropic_base_url, openai_base_url

    assert openai_base_url("https://openrouter.ai/api/v1") == "https://openrouter.ai/api/v1"
    assert openai_base_url("https://example.test/openai") == "https://example.test/openai"
    assert openai_base_url("http://localhost:11434") == "http://localhost:11434/v1"
    assert anthropic_base_url("https://proxy.example/anthropic") == "https://proxy.example/anthropic"
