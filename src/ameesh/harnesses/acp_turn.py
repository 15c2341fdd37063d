"""One ameesh turn on an ACP agent: ``python -m ameesh.harnesses.acp_turn [options] -- AGENT ARGS…``.

The ACP adapter (:mod:`ameesh.harnesses.acp`) runs this program as the turn's command, so an ACP turn is
one process group like every other harness's (killed whole on timeout, recorded while it runs). It starts
the agent over stdio with the ``agent-client-protocol`` SDK's client side, then:

- ``initialize``; ``session/new`` (the agent chooses the id), or for ``--resume ID`` ``session/resume``
  when the agent offers it, else ``session/load`` (its replay of the history is not printed);
- the model and the effort through the session's configuration options (categories ``model`` and
  ``thought_level``), each turn, since a loaded session does not keep them;
- ``session/prompt`` with the text; on ``--timeout`` (or SIGTERM) ``session/cancel``, a few seconds for
  the agent to stop, then the turn is reported failed.

It prints JSON lines: ``{"type":"session","session_id":…}`` as soon as the session is known, then
``{"type":"result","session_id","is_error","stop_reason","text","usage","context_tokens","error"}``.
Exit 0 when the agent answered (stop reason ``end_turn``), 1 otherwise, 2 when the agent could not be
started or the session opened. Permission requests are granted once (an unattended agent, like the
other harnesses in ameesh); the client offers no file system or terminal of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from typing import Any, cast

from ameesh.harnesses import EFFORTS, cue_for, kept_unanswered, nearest_effort
from ameesh.harnesses.opencode_log import LogWatch, is_opencode

AGENT_VAR = "AMEESH_ACP_AGENT"

CANCEL_GRACE = 5.0  # seconds an agent has to end a cancelled prompt before the turn is given up


def emit(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields, ensure_ascii=False) + "\n")
    sys.stdout.flush()


class TurnClient:
    """The client side ameesh shows the agent: it collects the answer and the context size of one turn,
    and the history a loaded session replays (who said what last)."""

    def __init__(self) -> None:
        self.recording = False  # False while a loaded session replays its history
        self.chunks: list[str] = []
        self.replayed: list[list[str]] = []  # [role, text] runs, oldest first
        self.context_tokens: int | None = None
        self.echo = False  # chat: print the answer as it comes

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        kind = getattr(update, "session_update", None)
        if kind == "usage_update":
            self.context_tokens = int(update.used)
            return
        text = getattr(getattr(update, "content", None), "text", None)
        if kind not in {"agent_message_chunk", "user_message_chunk"} or not isinstance(text, str):
            return
        if not self.recording:
            role = "user" if kind == "user_message_chunk" else "agent"
            if role == "agent" and self.replayed and self.replayed[-1][0] == role:  # one user chunk a message
                self.replayed[-1][1] += text
            else:
                self.replayed.append([role, text])
        elif kind == "agent_message_chunk":
            self.chunks.append(text)
            if self.echo:
                sys.stdout.write(text)
                sys.stdout.flush()

    def kept(self, prompt: str) -> str | None:
        """Whether the replayed history keeps ``prompt`` unanswered (a failed attempt's): ``last``,
        ``earlier`` (other messages were played after it), or None (:func:`ameesh.harnesses.kept_unanswered`)."""
        return kept_unanswered([(role, text) for role, text in self.replayed], prompt)

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        for wanted in ("allow_once", "allow_always"):
            for option in options:
                if option.kind == wanted:
                    chosen = AllowedOutcome(outcome="selected", option_id=option.option_id)
                    return RequestPermissionResponse(outcome=chosen)
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def _select(options: Any, category: str) -> Any:
    for option in options or []:
        if getattr(option, "category", None) == category and getattr(option, "type", None) == "select":
            return option
    return None


def _values(option: Any) -> list[str]:
    """The values a select option offers (flat, or in groups)."""
    values: list[str] = []
    for entry in option.options or []:
        if hasattr(entry, "value"):
            values.append(str(entry.value))
        for sub in getattr(entry, "options", None) or []:
            values.append(str(sub.value))
    return values


async def configure(
    conn: Any, session_id: str, options: Any, model: str | None, effort: str | None, *, notes: list[str]
) -> str | None:
    """Set the model and the effort on the session; an error message when the agent cannot take the model
    (an effort it has no levels for is noted in ``notes``: the turn runs on the agent's own)."""
    if model:
        option = _select(options, "model")
        if option is None:
            return f"the agent offers no model choice (asked for {model!r}); leave the agent's model unset"
        values = _values(option)
        if model not in values:
            return f"the agent has no model {model!r} (it offers: {', '.join(values) or 'none'})"
        if option.current_value != model:
            await conn.set_config_option(config_id=option.id, session_id=session_id, value=model)
    if effort:
        option = _select(options, "thought_level")
        values = _values(option) if option is not None else []
        known = tuple(v for v in values if v in EFFORTS)
        if option is None or not known:  # never claimed: the turn runs on the agent's own effort, and says so
            notes.append(f"effort {effort} not applied: the agent offers no effort levels for this model")
            return None
        level = nearest_effort(effort, known)
        if option.current_value != level:
            await conn.set_config_option(config_id=option.id, session_id=session_id, value=level)
    return None


async def open_session(conn: Any, client: TurnClient, args: argparse.Namespace) -> tuple[str, Any]:
    """Initialize the connection and open the session: new, or loaded (its history replayed, which shows
    a prompt kept without an answer), or resumed when the agent cannot load."""
    import acp
    from acp.schema import ClientCapabilities, Implementation

    init = await conn.initialize(
        protocol_version=acp.PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="ameesh", version="0.1.0"),
    )
    caps = init.agent_capabilities
    if args.resume is None:
        opened = await conn.new_session(cwd=args.cwd, mcp_servers=[])
        return str(opened.session_id), opened
    if caps is not None and caps.load_session:
        opened = await conn.load_session(session_id=args.resume, cwd=args.cwd, mcp_servers=[])
    elif caps is not None and caps.session_capabilities and caps.session_capabilities.resume is not None:
        opened = await conn.resume_session(session_id=args.resume, cwd=args.cwd, mcp_servers=[])
    else:
        raise LookupError("the agent can neither load nor resume a session (no loadSession, no session/resume)")
    return str(args.resume), opened


async def play_prompt(
    conn: Any, process: Any, sid: str, text: str, *, budget: float, stopping: asyncio.Event
) -> tuple[Any, str | None]:
    """Send one prompt. The prompt's future, and why it did not end by itself: ``timeout`` (``budget`` ran
    out) or ``stopped`` (SIGTERM) — then it was cancelled and the agent given a few seconds to end it —,
    or ``exited`` (the agent's process ended), else None."""
    import acp

    prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[acp.text_block(text)]))
    stop = asyncio.ensure_future(stopping.wait())
    exited = asyncio.ensure_future(process.wait())
    done, _ = await asyncio.wait({prompt, stop, exited}, timeout=max(0.0, budget), return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if prompt in done:
        if prompt.exception() is not None:  # the connection closed: did the agent's process end?
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(exited), 1.0)
        exited.cancel()
        return prompt, "exited" if process.returncode is not None else None
    if exited in done:
        return prompt, "exited"
    exited.cancel()
    with contextlib.suppress(Exception):  # out of time, or asked to stop: the agent is told to end the turn
        await conn.cancel(session_id=sid)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(prompt), CANCEL_GRACE)
    return prompt, "stopped" if stopping.is_set() else "timeout"


async def turn(args: argparse.Namespace) -> int:
    started = time.monotonic()
    sid: str | None = args.resume
    if not args.agent:
        why = f"no ACP agent command: set {AGENT_VAR} (e.g. 'opencode acp')"
        emit(type="result", session_id=sid, is_error=True, error=why)
        return 2
    try:
        import acp  # the SDK (pydantic models of the whole protocol) only once there is an agent to talk to
    except ImportError:
        why = "the ACP SDK is not installed: pip install 'anyy[acp]' (the agent-client-protocol package)"
        emit(type="result", session_id=sid, is_error=True, error=why)
        return 2

    client = TurnClient()
    watcher = LogWatch() if is_opencode(args.agent) else None  # from before the agent starts
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    try:
        async with (
            acp.spawn_agent_process(
                cast(Any, client),  # a partial client: the SDK answers "method not found" for the rest
                args.agent[0],
                *args.agent[1:],
                env=dict(os.environ),
                cwd=args.cwd,
                transport_kwargs={"limit": 64 << 20, "stderr": None},  # the agent's stderr is the turn's
            ) as (conn, process)
        ):
            return await _in_session(conn, process, client, args, stopping=stopping, started=started, watcher=watcher)
    except OSError as exc:
        emit(type="result", session_id=sid, is_error=True, error=f"cannot start the ACP agent {args.agent[0]!r}: {exc}")
        return 2


async def _in_session(
    conn: Any,
    process: Any,
    client: TurnClient,
    args: argparse.Namespace,
    *,
    stopping: asyncio.Event,
    started: float,
    watcher: LogWatch | None = None,
) -> int:
    """With the agent running: open or resume the session, set model and effort, then chat or play the turn."""
    import acp

    sid: str | None = args.resume
    try:
        sid, opened = await open_session(conn, client, args)
    except (acp.RequestError, LookupError) as exc:
        emit(type="result", session_id=sid, is_error=True, error=f"the session could not be opened: {exc}")
        return 2
    notes: list[str] = []
    if not args.chat:  # a person chatting sees the session id on the first line below
        emit(type="session", session_id=sid, resumed=args.resume is not None)
    try:
        options = getattr(opened, "config_options", None)
        problem = await configure(conn, sid, options, args.model, args.effort, notes=notes)
    except acp.RequestError as exc:
        problem = f"the agent refused the model or effort: {exc}"
    if problem:
        emit(type="result", session_id=sid, is_error=True, error=problem)
        return 1
    if args.chat:
        return await chat(conn, process, client, sid, stopping)
    kept = client.kept(args.prompt)
    text, continued = cue_for(kept, args.prompt).prompt or args.prompt, kept is not None
    # the agent kept a failed attempt's prompt: no second copy, a cue to answer it (that names it if other
    # messages came after it)
    client.recording = True
    budget = args.timeout - (time.monotonic() - started)
    fatal: list[str] = []
    watch = asyncio.ensure_future(_watch_errors(args.agent, sid, fatal, stopping, watcher))
    try:
        prompt, ended = await play_prompt(conn, process, sid, text, budget=budget, stopping=stopping)
    finally:
        watch.cancel()
    return report(sid, client, prompt, why=ended, timeout=args.timeout, continued=continued, fatal=fatal, notes=notes)


async def _watch_errors(
    agent: list[str], sid: str, fatal: list[str], stopping: asyncio.Event, watcher: LogWatch | None
) -> None:
    """Fail fast: the agent's first model-call error ends the turn (opencode's log; nothing for other
    agents, which report their errors over ACP)."""
    if watcher is None:
        return
    fatal.append(await watcher.first_error(sid))
    stopping.set()


async def chat(conn: Any, process: Any, client: TurnClient, sid: str, stopping: asyncio.Event) -> int:
    """``--chat``: a person's lines to the session, the answers printed as they come (ameesh attach)."""
    client.recording, client.echo = True, True
    print(f"session {sid}: type a message and Enter; an empty line or Ctrl+D ends", file=sys.stderr)
    while True:
        try:
            line = await asyncio.to_thread(input, "> ")
        except EOFError:
            return 0
        if not line.strip():
            return 0
        prompt, why = await play_prompt(conn, process, sid, line, budget=float("inf"), stopping=stopping)
        if why == "exited":
            print("the agent has exited", file=sys.stderr)
            return 1
        sys.stdout.write("\n")
        if prompt.done() and prompt.exception() is not None:
            print(f"error: {prompt.exception()}", file=sys.stderr)


def report(
    sid: str,
    client: TurnClient,
    prompt: Any,
    *,
    why: str | None,
    timeout: float,
    continued: bool,
    fatal: list[str] | None = None,
    notes: list[str] | None = None,
) -> int:
    text = "".join(client.chunks)
    base: dict[str, Any] = {"type": "result", "session_id": sid, "text": text, "context_tokens": client.context_tokens}
    base["continued"] = continued
    base["notes"] = notes or []
    if why is not None:
        if not prompt.done():
            prompt.cancel()
        error = {
            "timeout": f"no answer within {timeout:g} s: cancelled",
            "stopped": f"{fatal[0]} (ended at once on the agent's first error: cancelled)"
            if fatal
            else "stopped (SIGTERM): cancelled",
            "exited": "the agent exited during the turn (its stderr says why)",
        }[why]
        emit(**base, is_error=True, stop_reason="cancelled" if why != "exited" else None, error=error)
        return 1
    try:
        response = prompt.result()
    except Exception as exc:  # the agent answered the prompt request with an error
        emit(**base, is_error=True, error=str(exc) or type(exc).__name__)
        return 1
    usage = response.usage.model_dump(by_alias=True, exclude_none=True) if response.usage else {}
    reason = str(response.stop_reason)
    ok = reason == "end_turn"
    emit(**base, is_error=not ok, stop_reason=reason, usage=usage, error=None if ok else f"the agent stopped: {reason}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ameesh.harnesses.acp_turn")
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--resume", help="the session to continue (else a new one)")
    parser.add_argument("--model")
    parser.add_argument("--effort")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds from start to the answer")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--chat", action="store_true", help="talk to the session line by line")
    parser.add_argument("agent", nargs="*", help="the ACP agent's command")
    args = parser.parse_args(argv)
    sys.exit(asyncio.run(turn(args)))


if __name__ == "__main__":
    main()
