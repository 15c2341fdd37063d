"""``anyy chat`` streams its own execution as the model writes it, not the recorded answer once the turn
has ended (SPEC C1, C3): a model held mid-answer, and the first pieces are on the terminal already."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyy.profiles import create_profile
from tests.cli.live import ANYY, env_for
from tests.fakes.model_server import FakeModelServer, Reply
from tests.killtest.gateway_process import GatewayProcess

PIECES = [f"part {i:02d} of the answer. " for i in range(8)]
HELD_AT = 3  # pieces streamed before the model holds
DEADLINE = 120.0


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    server.start()
    yield server
    server.stop()


def _gateway(tmp_path: Path, server: FakeModelServer) -> GatewayProcess:
    home = tmp_path / "home"
    profile = create_profile(home, "default")
    config = profile.config_path.read_text().replace(
        'provider = "offline"\nmodel = "offline"', 'provider = "fake"\nmodel = "m1"'
    )
    config += f'\n[providers.fake]\nkind = "openai"\nbase_url = "{server.openai_url}"\napi_key_env = ""\n'
    profile.config_path.write_text(config)
    (tmp_path / "work").mkdir()
    return GatewayProcess(home, "default", cwd=tmp_path / "work", log=tmp_path / "stderr.log")


def _read_until(stream: int, wanted: str) -> str:
    """What ``stream`` printed, read until ``wanted`` is in it (or the deadline: then the assertion says so)."""
    seen = ""
    deadline = time.monotonic() + DEADLINE
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], deadline - time.monotonic())
        if not ready:
            break
        chunk = os.read(stream, 4096)
        if not chunk:
            break
        seen += chunk.decode()
    return seen


def test_c1_chat_prints_the_answer_while_the_model_still_writes_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    gateway = _gateway(tmp_path, model_server)
    gateway.start()
    reply = Reply(text=PIECES, hold_at=1 + HELD_AT)  # the first event is the role's
    model_server.enqueue(reply)
    chat = subprocess.Popen(
        [ANYY, "chat", "--stream", "tell me"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env_for(gateway.home),
    )
    try:
        assert chat.stdout is not None
        streamed = "".join(PIECES[:HELD_AT])
        seen = _read_until(chat.stdout.fileno(), streamed)
        assert streamed in seen, f"not streamed while the model held its answer: {seen!r}"
        assert chat.poll() is None  # the turn has not ended: this is the stream, not the recorded answer
        assert PIECES[HELD_AT] not in seen
        reply.hold.set()
        rest, _ = chat.communicate(timeout=DEADLINE)
        assert chat.returncode == 0
        assert (seen + rest.decode()).count(PIECES[0]) == 1  # the recorded answer is not printed again
        assert "".join(PIECES) in seen + rest.decode()
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
        gateway.stop()
