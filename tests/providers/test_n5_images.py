"""N5: image attachments reach models that read images, as OpenAI-compatible image content parts and
Anthropic image blocks (asserted on the request bodies the loopback fake servers receive); a provider
whose models read text only gets a clear error before any call."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from anyy.api.events import ExecutionStateChanged
from anyy.domain.entries import Attachment, EntryKind
from anyy.domain.queue import NewSubmission
from anyy.profiles.profile import create_profile
from anyy.providers.registry import ModelRegistry
from anyy.runtime.assembly import build_deps, new_session
from anyy.runtime.runtime import Runtime
from tests.fakes.model_server import FakeModelServer, Reply

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _run(
    tmp_path: Path, server: FakeModelServer, provider_table: str, provider: str, model: str = "vision-1"
) -> tuple[str, str]:
    """One turn with a PNG and a text attachment on ``provider``: (final state, the execution's note)."""

    async def scenario() -> tuple[str, str]:
        profile = create_profile(tmp_path / "home", "default")
        config_path = profile.path / "config.toml"
        config_path.write_text(config_path.read_text() + provider_table)
        (tmp_path / "work").mkdir(exist_ok=True)
        deps = build_deps(profile, workdir=tmp_path / "work")
        deps.owner.start()
        runtime = Runtime(deps)
        await runtime.start()
        try:
            spec = msgspec.structs.replace(new_session(profile.load_config()), provider=provider, model=model)
            session = await deps.owner.call(lambda s: s.create_session(spec))
            image = await deps.owner.call(lambda s: s.put_object(PNG, media_type="image/png"))
            text = await deps.owner.call(lambda s: s.put_object(b"notes", media_type="text/plain"))
            attachments = [
                Attachment(object=image.hash, name="chart.png", media_type="image/png", size=image.size),
                Attachment(object=text.hash, name="notes.txt", media_type="text/plain", size=text.size),
            ]
            events = deps.bus.subscribe(session.id)
            await runtime.submit(session.id, NewSubmission(text="what is in the chart?", attachments=attachments))

            async def ended() -> ExecutionStateChanged:
                while True:
                    event = await events.get()
                    if isinstance(event, ExecutionStateChanged) and event.state in ("completed", "failed"):
                        return event

            final = await asyncio.wait_for(ended(), 60)
            path = await deps.owner.call(lambda s: s.path(session.id))
            notices = " ".join(e.text for e in path if e.kind not in (EntryKind.USER, EntryKind.ASSISTANT))
            return final.state, f"{final.error} {notices}"
        finally:
            await runtime.aclose()
            assert isinstance(deps.models, ModelRegistry)
            await deps.models.aclose()
            await deps.owner.aclose()

    return asyncio.run(scenario())


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    fake = FakeModelServer()
    fake.start()
    yield fake
    fake.stop()


def test_n5_openai_compatible_models_get_image_content_parts(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(Reply(text=["A rising line."]))
    table = f'\n[providers.oa]\nkind = "openai"\nbase_url = "{server.openai_url}"\napi_key_env = ""\n'
    state, _ = _run(tmp_path, server, table, "oa")
    assert state == "completed"
    user = next(m for m in server.received[0].body["messages"] if m["role"] == "user")
    text, image = user["content"]
    assert image == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _base64(PNG)}}
    assert text["type"] == "text"
    assert text["text"].startswith('what is in the chart?\n\n[Attached file "notes.txt"')  # U5: the file too


def test_n5_anthropic_models_get_image_blocks(
    tmp_path: Path, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANYY_TEST_ANTHROPIC_KEY", "sk-ant-test")
    server.enqueue(Reply(text=["A rising line."]))
    table = (
        f'\n[providers.claude]\nkind = "anthropic"\nbase_url = "{server.anthropic_url}"\n'
        'api_key_env = "ANYY_TEST_ANTHROPIC_KEY"\n'
    )
    state, _ = _run(tmp_path, server, table, "claude")
    assert state == "completed"
    user = server.received[0].body["messages"][0]
    assert user["role"] == "user"
    image, text = user["content"]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
    }
    assert text["text"].startswith('what is in the chart?\n\n[Attached file "notes.txt"')  # U5: the file too


@pytest.mark.parametrize("provider", ["textonly", "offline"])
def test_n5_a_text_only_model_gets_a_clear_error_before_the_call(
    tmp_path: Path, server: FakeModelServer, provider: str
) -> None:
    table = (
        f'\n[providers.textonly]\nkind = "openai"\nbase_url = "{server.openai_url}"\napi_key_env = ""\nimages = false\n'
    )
    model = "offline" if provider == "offline" else "vision-1"
    state, note = _run(tmp_path, server, table, provider, model)
    assert state == "failed"
    assert f"the model {provider}/{model} does not accept images" in note, note
    assert "switch to a model that reads images" in note
    assert server.received == []  # no call was made
