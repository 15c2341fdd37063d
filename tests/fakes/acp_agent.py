"""A small ACP agent written with the agent side of the same SDK, for the ACP adapter's tests that cover
what the real agent (opencode) does not offer: an agent that can only ``session/resume`` (or neither),
effort levels (``thought_level``), permission requests, ``usage_update``.

Run as ``python tests/fakes/acp_agent.py`` (the turn's working directory is elsewhere). It keeps its
sessions as JSON files in ``ACP_TEST_AGENT_HOME``; ``ACP_TEST_AGENT_OPEN`` says how a session is opened
again: ``load`` (history replayed), ``resume`` or ``none``. A prompt is answered
``ANSWER n: «prompt» · model=M · effort=E`` (n: the prompts the session holds); a prompt containing
``FAIL`` the first time is kept and refused, ``HOLD`` waits for ``session/cancel``, ``CRASH`` ends the
agent's process, ``PERMIT`` asks the client's permission first and says which option it got.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any, Literal

import acp
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    ToolCallUpdate,
    UsageUpdate,
)

HOME = Path(os.environ.get("ACP_TEST_AGENT_HOME", "."))
OPEN = os.environ.get("ACP_TEST_AGENT_OPEN", "load")
CHOICES = {"model": ["small", "large"], "thought_level": ["low", "medium", "high"]}


def _path(session_id: str) -> Path:
    return HOME / f"{session_id}.json"


def _read(session_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_path(session_id).read_text(encoding="utf-8"))
    return data


def _write(session_id: str, data: dict[str, Any]) -> None:
    HOME.mkdir(parents=True, exist_ok=True)
    _path(session_id).write_text(json.dumps(data), encoding="utf-8")


class TestAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.config = {"model": "small", "thought_level": "medium"}
        self.cancelled = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def options(self) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        categories: tuple[Literal["model", "thought_level"], ...] = ("model", "thought_level")
        return [
            SessionConfigOptionSelect(
                id=f"opt-{category}",
                name=category,
                category=category,
                type="select",
                current_value=self.config[category],
                options=[SessionConfigSelectOption(value=v, name=v) for v in CHOICES[category]],
            )
            for category in categories
        ]

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        sessions = SessionCapabilities(resume=SessionResumeCapabilities() if OPEN == "resume" else None)
        capabilities = AgentCapabilities(load_session=OPEN == "load", session_capabilities=sessions)
        return InitializeResponse(protocol_version=protocol_version, agent_capabilities=capabilities)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"test-{uuid.uuid4()}"
        _write(session_id, {"cwd": cwd, "history": [], "failed": []})
        return NewSessionResponse(session_id=session_id, config_options=self.options())

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        for role, text in _read(session_id)["history"]:
            block = acp.update_user_message_text(text) if role == "user" else acp.update_agent_message_text(text)
            await self.conn.session_update(session_id=session_id, update=block)
        return LoadSessionResponse(config_options=self.options())

    async def resume_session(self, session_id: str, cwd: str, **kwargs: Any) -> ResumeSessionResponse:
        _read(session_id)
        return ResumeSessionResponse(config_options=self.options())

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        self.config[config_id.removeprefix("opt-")] = str(value)
        return SetSessionConfigOptionResponse(config_options=self.options())

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        data = _read(session_id)
        data["history"].append(["user", text])
        _write(session_id, data)
        if "FAIL" in text and text not in data["failed"]:
            data["failed"].append(text)
            _write(session_id, data)
            raise acp.RequestError.internal_error({"message": "test agent: the model refused"})
        if "CRASH" in text:
            os._exit(3)
        if "HOLD" in text:
            await self.cancelled.wait()
            return PromptResponse(stop_reason="cancelled")
        if "PERMIT" in text:
            options = [
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                PermissionOption(option_id="yes", name="Allow once", kind="allow_once"),
            ]
            call = ToolCallUpdate(tool_call_id="t1", title="write a file")
            answer = await self.conn.request_permission(session_id=session_id, tool_call=call, options=options)
            text = f"{text} (permission: {getattr(answer.outcome, 'option_id', 'cancelled')})"
        asked = sum(1 for role, _ in data["history"] if role == "user")
        reply = f"ANSWER {asked}: «{text}» · model={self.config['model']} · effort={self.config['thought_level']}"
        await self.conn.session_update(session_id=session_id, update=acp.update_agent_message_text(reply))
        used = UsageUpdate(session_update="usage_update", used=1000 * asked, size=100_000)
        await self.conn.session_update(session_id=session_id, update=used)
        data["history"].append(["agent", reply])
        _write(session_id, data)
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.set()


if __name__ == "__main__":
    asyncio.run(acp.run_agent(TestAgent(), use_unstable_protocol=True))  # type: ignore[arg-type]
