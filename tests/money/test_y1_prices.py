"""Y1: every model call is priced from the pinned price table (or the profile's [prices]), cache reads and
writes and reasoning tokens included, the cost kept with the entry it produced; an unknown model is
unpriced, never $0. Real SDKs against the loopback fake servers, over real HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

from anyy.domain.entries import EntryKind
from anyy.runtime.deps import Deps
from anyy.runtime.pricing import TABLE_VERSION
from tests.fakes.model_server import FakeModelServer, Reply
from tests.money.support import KEYS, money_profile, new_chat, running, turn


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModelServer]:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    fake = FakeModelServer()
    fake.start()
    yield fake
    fake.stop()


def _near(cost: int | None, usd: float) -> None:
    assert cost is not None, "the call was left unpriced"
    assert abs(cost / 1e9 - usd) <= usd * 0.005, (cost / 1e9, usd)


async def _assistant_costs(deps: Deps, session_id: str) -> list[tuple[int | None, dict[str, int]]]:
    path = await deps.owner.call(lambda s: s.path(session_id))
    return [(e.data.get("cost"), e.data.get("usage", {})) for e in path if e.kind == EntryKind.ASSISTANT]


async def test_y1_openai_call_priced_with_cache_reads_and_reasoning(tmp_path: Path, server: FakeModelServer) -> None:
    # o3-mini: $1.10 input, $4.40 output (reasoning tokens are output), $0.55 cached input, per million.
    server.enqueue(
        Reply(text=["fine"], input_tokens=120_000, cache_read=80_000, output_tokens=30_000, reasoning_tokens=25_000)
    )
    profile = money_profile(tmp_path / "home", server)
    async with running(profile, tmp_path / "work") as (runtime, deps):
        session = await new_chat(deps, profile, "gpt", "o3-mini")
        assert await turn(runtime, deps, session, "hello") == "completed"
        [(cost, usage)] = await _assistant_costs(deps, session.id)
        report = await deps.owner.call(lambda s: s.usage_report("session"))
    assert usage == {"input": 120_000, "output": 30_000, "cache_read": 80_000, "reasoning": 25_000}
    _near(cost, (120_000 * 1.10 + 80_000 * 0.55 + 30_000 * 4.40) / 1e6)
    assert [(line.key, line.calls, line.unpriced, line.cost_nano) for line in report] == [(session.id, 1, 0, cost)]
    assert report[0].reasoning == 25_000


async def test_y1_anthropic_call_priced_with_cache_reads_and_writes(tmp_path: Path, server: FakeModelServer) -> None:
    # claude-sonnet-4-5: $3 input, $15 output, $0.30 cache read, $3.75 cache write (5 min), per million.
    server.enqueue(Reply(text=["fine"], input_tokens=5_000, cache_read=60_000, cache_write=9_000, output_tokens=2_000))
    profile = money_profile(tmp_path / "home", server)
    async with running(profile, tmp_path / "work") as (runtime, deps):
        session = await new_chat(deps, profile, "claude", "claude-sonnet-4-5")
        assert await turn(runtime, deps, session, "hello") == "completed"
        [(cost, usage)] = await _assistant_costs(deps, session.id)
    assert usage == {"input": 5_000, "output": 2_000, "cache_read": 60_000, "cache_write": 9_000}
    _near(cost, (5_000 * 3 + 60_000 * 0.30 + 9_000 * 3.75 + 2_000 * 15) / 1e6)


async def test_y1_unknown_model_is_unpriced_never_zero(tmp_path: Path, server: FakeModelServer) -> None:
    server.enqueue(Reply(text=["one"]), Reply(text=["two"]))
    profile = money_profile(tmp_path / "home", server)
    async with running(profile, tmp_path / "work") as (runtime, deps):
        session = await new_chat(deps, profile, "gpt", "my-local-llama")
        assert await turn(runtime, deps, session, "hello") == "completed"
        assert await turn(runtime, deps, session, "again") == "completed"
        costs = [cost for cost, _ in await _assistant_costs(deps, session.id)]
        [line] = await deps.owner.call(lambda s: s.usage_report("model"))
    assert costs == [None, None]
    assert (line.key, line.calls, line.unpriced, line.usd) == ("gpt/my-local-llama", 2, 2, "unpriced")


async def test_y1_profile_prices_override_the_table_and_zero_is_a_price_when_written(
    tmp_path: Path, server: FakeModelServer
) -> None:
    server.enqueue(Reply(text=["a"], input_tokens=1_000_000, output_tokens=500_000), Reply(text=["b"]))
    extra = '\n[prices."gpt/my-local-llama"]\ninput = 0\noutput = 0\n[prices."claude/claude-sonnet-4-5"]\n'
    extra += "input = 1.0\noutput = 2.0\n"
    profile = money_profile(tmp_path / "home", server, extra)
    async with running(profile, tmp_path / "work") as (runtime, deps):
        claude = await new_chat(deps, profile, "claude", "claude-sonnet-4-5")
        assert await turn(runtime, deps, claude, "hello") == "completed"
        local = await new_chat(deps, profile, "gpt", "my-local-llama")
        assert await turn(runtime, deps, local, "hello") == "completed"
        [(claude_cost, _)] = await _assistant_costs(deps, claude.id)
        [(local_cost, _)] = await _assistant_costs(deps, local.id)
    assert claude_cost == 2 * 1_000_000_000  # $1 for 1M input + $1 for 0.5M output at $2
    assert local_cost == 0


def test_y1_the_pinned_price_table_is_the_one_installed() -> None:
    assert version("genai-prices") == TABLE_VERSION


def test_y1_the_price_table_is_not_imported_at_start_up() -> None:
    code = "import sys, anyy.cli.main, anyy.runtime.assembly, anyy.gateway.app; print('genai_prices' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
