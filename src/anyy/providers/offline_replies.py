"""What the offline model says when nothing is scripted: a plain, deterministic answer.

It reads the last message of the request:

- a user message that matches a cue, with the cue's tool offered in the request, becomes a tool call;
- a user message that matches no cue is answered in words that say this is the offline model;
- tool results (the model's own calls coming back) are summarised, one line per result.

The cues (case-insensitive, on the last user message, surrounding spaces ignored):

- ``read FILE`` (FILE one word): calls ``read_file`` with the path FILE;
- ``write FILE: TEXT`` (FILE one word): calls ``write_file`` with the path FILE and the content TEXT;
- ``run: COMMAND``: calls ``shell`` with the command COMMAND;
- a question ending in ``?`` that contains ``ask me``: calls ``ask_user``, giving the question back;
- ``summarise …`` or ``summarize …``: answers with a short summary (the conversation's user messages);
- ``delegate: BRIEF; BRIEF…`` (briefs separated by ``;`` or new lines): calls ``delegate`` with one task
  per brief.

Arguments are named as the offered tool's schema names them (``path``, ``file_path``, …).
When a cue's tool is not offered (not enabled in the session), the answer says so instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from anyy.domain.model_io import (
    AssistantMessage,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

PREFIX = "(offline model)"

_READ = re.compile(r"^read\s+(?P<path>\S+)$", re.IGNORECASE)
_WRITE = re.compile(r"^write\s+(?P<path>[^:\s]+):\s?(?P<content>.*)$", re.IGNORECASE | re.DOTALL)
_RUN = re.compile(r"^run:\s*(?P<command>\S.*?)\s*$", re.IGNORECASE | re.DOTALL)
_SUMMARY = re.compile(r"^summari[sz]e\b", re.IGNORECASE)
_DELEGATE = re.compile(r"^delegate:\s*(?P<briefs>\S.*)$", re.IGNORECASE | re.DOTALL)

# The argument a cue fills, by the names tools commonly give it; the tool's own schema decides.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "path": ("path", "file", "file_path", "filename"),
    "content": ("content", "text", "data", "body"),
    "command": ("command", "cmd", "script"),
    "question": ("question", "prompt", "text"),
}
_QUOTE_LIMIT = 300


def reply(request: ModelRequest, call_prefix: str) -> list[ProviderEvent]:
    """The offline model's answer to ``request``: text deltas, or tool calls (``call_prefix`` + n)."""
    messages = request.messages
    if not messages:
        return _say(f"{PREFIX} Hello. There is nothing to answer yet: send a message.")
    last = messages[-1]
    if isinstance(last, ToolResultMessage):
        return _summarise_results(messages)
    if isinstance(last, AssistantMessage):
        return _say(f"{PREFIX} (nothing new to answer since my last reply)")
    return _answer(last.text, request, call_prefix)


def _answer(text: str, request: ModelRequest, call_prefix: str) -> list[ProviderEvent]:
    stripped = text.strip()
    call_id = f"{call_prefix}1"
    if match := _DELEGATE.match(stripped):
        briefs = [brief.strip() for brief in re.split(r"[;\n]", match["briefs"]) if brief.strip()]
        if any(tool.name == "delegate" for tool in request.tools):
            return [
                ToolCallEvent(call_id=call_id, name="delegate", arguments={"tasks": [{"brief": b} for b in briefs]})
            ]
        return _say(f"{PREFIX} I would call the delegate tool ({len(briefs)} task(s)), but it is not enabled here.")
    if match := _RUN.match(stripped):
        return _call(request, "shell", {"command": match["command"]}, call_id)
    if match := _WRITE.match(stripped):
        return _call(request, "write_file", {"path": match["path"], "content": match["content"]}, call_id)
    if match := _READ.match(stripped):
        return _call(request, "read_file", {"path": match["path"]}, call_id)
    if stripped.endswith("?") and "ask me" in stripped.lower():
        question = f"{PREFIX} You asked me to ask you: «{_shorten(stripped)}» What is your answer?"
        return _call(request, "ask_user", {"question": question}, call_id)
    if _SUMMARY.match(stripped):
        return _say(_summary(request.messages[:-1]))
    return _say(
        f"{PREFIX} You said: «{_shorten(stripped)}». I am anyy's offline model: I answer deterministically, "
        "with no network and no key. Configure a provider in config.toml to talk to a real model. "
        "I act on: 'read FILE', 'write FILE: TEXT', 'run: COMMAND', and a question containing 'ask me'."
    )


def _call(request: ModelRequest, tool: str, values: dict[str, str], call_id: str) -> list[ProviderEvent]:
    spec = next((t for t in request.tools if t.name == tool), None)
    if spec is None:
        wanted = ", ".join(f"{k}={v!r}" for k, v in values.items() if k != "question")
        what = f" ({wanted})" if wanted else ""
        return _say(f"{PREFIX} I would call the {tool} tool{what}, but it is not enabled in this session.")
    return [ToolCallEvent(call_id=call_id, name=tool, arguments=_arguments(spec, values))]


def _arguments(spec: ToolSpec, values: dict[str, str]) -> dict[str, Any]:
    """Name each value as the tool's schema names it: a known synonym, else the required keys in order."""
    properties: dict[str, Any] = spec.parameters.get("properties", {}) or {}
    required: list[str] = [r for r in spec.parameters.get("required", []) or [] if isinstance(r, str)]
    arguments: dict[str, Any] = {}
    unnamed: list[str] = []
    for role, value in values.items():
        name = next((n for n in _SYNONYMS.get(role, (role,)) if n in properties and n not in arguments), None)
        if name is None:
            unnamed.append(value)
        else:
            arguments[name] = value
    spare = [r for r in required if r not in arguments]
    for value, name in zip(unnamed, spare, strict=False):
        arguments[name] = value
    return arguments


def _summarise_results(messages: Sequence[UserMessage | AssistantMessage | ToolResultMessage]) -> list[ProviderEvent]:
    results: list[ToolResultMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolResultMessage):
            break
        results.append(message)
    lines = [f"{PREFIX} Here is what the tools returned:"]
    for result in reversed(results):
        if result.name == "ask_user" and not result.is_error:
            lines.append(f"- you answered: «{_shorten(result.text)}»")
        elif result.is_error:
            lines.append(f"- {result.name or 'a tool'} failed: {_shorten(result.text)}")
        else:
            size = len(result.text)
            lines.append(
                f"- {result.name or 'a tool'} returned {size} character{'s' * (size != 1)}: «{_shorten(result.text)}»"
            )
    return _say("\n".join(lines))


def _summary(messages: Sequence[UserMessage | AssistantMessage | ToolResultMessage]) -> str:
    asked = [m.text for m in messages if isinstance(m, UserMessage) and m.text.strip()]
    tools = sum(1 for m in messages if isinstance(m, ToolResultMessage))
    if not asked:
        return f"{PREFIX} Summary: nothing was said yet."
    points = "\n".join(f"- the user said: «{_shorten(text, 120)}»" for text in asked)
    return f"{PREFIX} Summary of {len(messages)} messages ({tools} tool results):\n{points}"


def _shorten(text: str, limit: int = _QUOTE_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _say(text: str) -> list[ProviderEvent]:
    """Text as word-sized deltas, so a client shows it streaming (and ``stream_delay`` paces it)."""
    pieces = re.findall(r"\S+\s*|\s+", text)
    return [TextDelta(text=piece) for piece in pieces]
