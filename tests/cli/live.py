"""A real Gateway per test, started and stopped with the ``anyy`` console script, and ``anyy chat`` run
as a real process. Synchronisation waits on events and process output, with timeouts; never on sleeps."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

from anyy.client.protocol import Reply
from anyy.client.sync import Client, connect
from anyy.profiles import get_profile
from anyy.profiles.gateway_address import Address, read_address

BIN = Path(sys.executable).parent
ANYY = str(BIN / "anyy")
TIMEOUT = 60.0

# A provider that fails at once: nothing listens on port 1 of the loopback, and automatic retries are off.
BROKEN_PROVIDER = """
[providers.broken]
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
"""


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANYY_PROFILE", "ANYY_HOME")}
    env["ANYY_HOME"] = str(home)
    return env


def run(home: Path, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ANYY, *args], capture_output=True, text=True, env=env_for(home), timeout=timeout, check=False
    )


def start(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([ANYY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(home))


def finish(process: subprocess.Popen[str], timeout: float = TIMEOUT) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def chat_json(home: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    done = run(home, "chat", "--json", *args)
    assert done.stdout, f"no JSON on stdout (exit {done.returncode}): {done.stderr}"
    return done.returncode, json.loads(done.stdout), done.stderr


@dataclass
class LiveGateway:
    home: Path
    profile: str

    @property
    def address(self) -> Address:
        found = read_address(get_profile(self.home, self.profile))
        assert found is not None, "the Gateway's gateway.json is gone"
        return found

    @contextlib.contextmanager
    def client(self) -> Iterator[Client]:
        with connect(self.address) as client:
            yield client


def wait_event(client: Client, match: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT) -> dict[str, Any]:
    """The first event that matches, read within ``timeout`` seconds (replies in between are dropped)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("the expected event did not come")
        message = client.receive(left)
        if isinstance(message, Reply):
            continue
        params: dict[str, Any] = msgspec.to_builtins(message)  # with its "type"
        if match(params):
            return params


def wait_queued(client: Client, session_id: str, text: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    """The pending submission with this text, once the session's queue holds it (on queue_changed)."""
    deadline = time.monotonic() + timeout
    while True:
        for item in client.call("session.queue.list", {"session_id": session_id}):
            if item["text"] == text:
                return item  # type: ignore[no-any-return]
        wait_event(
            client,
            lambda e: e["type"] == "queue_changed" and e["session_id"] == session_id,
            deadline - time.monotonic(),
        )


def make_busy(client: Client, session_id: str, command: str = "run: sleep 1") -> dict[str, Any]:
    """Start a turn that holds the session in a shell call; return its tool_started event (subscribed)."""
    client.call("session.send", {"session_id": session_id, "text": command})
    return wait_event(client, lambda e: e["type"] == "tool_started" and e["session_id"] == session_id)


StartGateway = Callable[..., LiveGateway]


@pytest.fixture
def start_gateway(home: Path) -> Iterator[StartGateway]:
    """Create a profile and start its Gateway with ``anyy gateway start``; stopped in teardown."""
    started: list[LiveGateway] = []

    def begin(
        profile: str = "default", config_extra: str = "", retries: bool = True, max_retries: int | None = None
    ) -> LiveGateway:
        created = run(home, "profile", "create", profile)
        assert created.returncode == 0, created.stderr
        config = home / "profiles" / profile / "config.toml"
        text = config.read_text()
        if not retries:
            text = text.replace("enabled = true", "enabled = false", 1)
        if max_retries is not None:
            text = text.replace("max_retries = 3", f"max_retries = {max_retries}", 1)
        config.write_text(text + config_extra)
        done = run(home, "gateway", "start", "--profile", profile)
        assert done.returncode == 0, done.stderr
        live = LiveGateway(home=home, profile=profile)
        started.append(live)
        return live

    yield begin
    for live in started:
        run(home, "gateway", "stop", "--profile", live.profile)
