"""``anyy chat [--session ID | --role NAME] [--json] [--timeout S] "…"``: one turn through the Gateway
(SPEC C1-C7, B3, X3).

How the command follows *its own* turn, even when other clients use the session meanwhile (C3):

- It subscribes to the session's events, then sends its message with ``session.send``; the reply is the
  submission, durable in the Gateway from then on.
- It waits for that submission's outcome with ``session.wait`` (by submission id, so later turns of the
  session never answer for it; in slices when there is no ``--timeout``).
- Streaming (on a terminal): a prompt never joins an execution that is already running, so the
  execution that answers it is one whose ``execution_state: running`` event arrives after the send. At
  each such event, while its execution is unknown, the command looks its submission up
  (``session.wait`` with timeout 0) and keeps that execution's ``text_delta`` events aside meanwhile.
  The lookup is sent after the event arrived, so it sees the submission as that execution took it: when
  the submission is still pending, every execution announced so far is someone else's and its text is
  dropped.
- The recorded answer (``--json``, and the output off a terminal) is read from ``session.history``: the
  assistant entries after the submission's own user entry, up to the moment its outcome was recorded.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from anyy.cli.context import with_profile

if TYPE_CHECKING:
    from anyy.cli.rpc import RpcClient
    from anyy.profiles import Profile

EXIT_COMPLETED = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_SUSPENDED = 3
EXIT_FAILED = 4
EXIT_INTERRUPTED = 5
EXIT_REMOVED = 6
EXIT_TIMEOUT = 7
EXIT_CTRL_C = 130

# The submission's state once session.wait returns -> (result word, exit status).
OUTCOMES: dict[str, tuple[str, int]] = {
    "completed": ("completed", EXIT_COMPLETED),
    "suspended": ("suspended", EXIT_SUSPENDED),
    "failed": ("failed", EXIT_FAILED),
    "interrupted": ("interrupted", EXIT_INTERRUPTED),
    "cleared": ("cleared", EXIT_REMOVED),
    "cancelled": ("cancelled", EXIT_REMOVED),
    "timed_out": ("timeout", EXIT_TIMEOUT),
}
SETTLED = frozenset(OUTCOMES)
WAIT_SLICE = 300.0  # seconds per session.wait call when the caller set no timeout
REPLY_GRACE = 10.0  # how much later than the wait's end the Gateway's reply may come
HISTORY_PAGE = 100

CHAT_HELP = """Send one message and wait for its answer.

\b
  anyy chat "TEXT"                  a new session (--role NAME: with that role)
  anyy chat --session ID "TEXT"     the next turn of an existing session

Needs the profile's Gateway (`anyy gateway start`). On a terminal the answer is
streamed; otherwise it is printed once recorded. A new session's id is printed
on stderr. Ctrl+C or --timeout stops the waiting only: the Gateway goes on with
the message.

\b
Exit status:
  0  completed
  1  other errors (no Gateway, unknown session or role, ...)
  2  usage error
  3  suspended: the agent asked a question (answer it with the RPC session.answer) or waits for
     your approval of a tool call (answer it with the RPC session.approve)
  4  failed (the error is printed)
  5  interrupted (stopped before it finished)
  6  removed from the queue before it started (cleared or cancelled)
  7  timeout (--timeout passed; the work goes on in the Gateway)
  130 Ctrl+C (the work goes on in the Gateway)
"""


class ChatError(click.ClickException):
    """A failure reported as ``error: …`` with exit status 1."""

    exit_code = EXIT_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


@dataclass
class Streamer:
    """Writes the text deltas of the execution that took ``submission_id``, and only those."""

    client: RpcClient
    submission_id: str
    write: Callable[[str], None]
    mine: str | None = None
    streamed: str = ""
    _candidates: list[str] = field(default_factory=list)  # announced since the send, not yet ruled out
    _held: dict[str, list[str]] = field(default_factory=dict)
    _lookup: int | None = None
    _lookup_covers: list[str] = field(default_factory=list)
    _stale: bool = False
    _pass_ended: bool = False

    def on_event(self, params: dict[str, Any]) -> None:
        kind = params.get("type")
        execution = params.get("execution_id")
        if kind == "execution_state" and params.get("state") == "running" and self.mine is None:
            if isinstance(execution, str) and execution not in self._candidates:
                self._candidates.append(execution)
                self._held[execution] = []
                self._look_up()
        elif kind == "text_delta" and isinstance(execution, str):
            text = str(params.get("text", ""))
            if execution == self.mine:
                self._emit(text)
            elif self.mine is None and execution in self._held:
                self._held[execution].append(text)
        elif kind == "entries_appended" and self.mine is not None:
            self._pass_ended = True

    def _look_up(self) -> None:
        if self._lookup is not None:
            self._stale = True  # ask again once this answer is in: it may predate the new execution
            return
        self._lookup_covers = list(self._candidates)
        self._lookup = self.client.request("session.wait", {"submission_id": self.submission_id, "timeout": 0})

    def owns(self, reply_id: int | str | None) -> bool:
        return reply_id is not None and reply_id == self._lookup

    def on_lookup(self, submission: dict[str, Any]) -> None:
        self._lookup = None
        execution = submission.get("execution_id")
        if isinstance(execution, str):
            self.found(execution)
            return
        for ruled_out in self._lookup_covers:  # they started while the submission was still pending
            self._held.pop(ruled_out, None)
            self._candidates.remove(ruled_out)
        if self._stale:
            self._stale = False
            self._look_up()

    def found(self, execution: str) -> None:
        if self.mine is not None:
            return
        self.mine = execution
        for text in self._held.get(execution, []):
            self._emit(text)
        self._held.clear()
        self._candidates.clear()

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self._pass_ended and self.streamed and not self.streamed.endswith("\n"):
            text = "\n" + text
        self._pass_ended = False
        self.streamed += text
        self.write(text)


@dataclass
class Waited:
    submission: dict[str, Any]
    timed_out: bool  # the caller's timeout passed before an outcome (the work goes on)


def wait_for_outcome(
    client: RpcClient, submission: dict[str, Any], timeout: float | None, streamer: Streamer | None
) -> Waited:
    """Wait for this submission's outcome (or its suspension on a question) with session.wait, feeding
    the streamer with the events that arrive meanwhile."""
    submission_id = submission["id"]
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_SLICE if deadline is None else max(deadline - time.monotonic(), 0.0)
        slice_ = min(left, WAIT_SLICE)
        wait_id = client.request("session.wait", {"submission_id": submission_id, "timeout": slice_})
        while True:
            try:
                message = client.receive(slice_ + REPLY_GRACE)
            except TimeoutError:
                return Waited(submission, timed_out=True)  # the Gateway did not even answer the wait
            from anyy.cli.rpc import Event

            if isinstance(message, Event):
                if streamer is not None:
                    streamer.on_event(message.params)
                continue
            if streamer is not None and streamer.owns(message.id):
                streamer.on_lookup(message.result())
                continue
            if message.id == wait_id:
                submission = message.result()
                break
        if submission.get("state") in SETTLED:
            if streamer is not None and isinstance(submission.get("execution_id"), str):
                streamer.found(submission["execution_id"])
            return Waited(submission, timed_out=False)
        if deadline is not None and time.monotonic() >= deadline:
            return Waited(submission, timed_out=True)


@dataclass
class Recorded:
    response: str
    passes: int
    question: str | None
    usage: dict[str, int] | None = None  # the turn's tokens, summed over its model calls
    context_tokens: int | None = None  # what its last model call re-read (the context size now)


def _usage_of(assistant: list[dict[str, Any]]) -> tuple[dict[str, int] | None, int | None]:
    reported = [e["data"]["usage"] for e in assistant if isinstance((e.get("data") or {}).get("usage"), dict)]
    if not reported:
        return None, None
    keys = ("input", "output", "cache_read", "cache_write")
    total = {key: sum(int(u.get(key, 0)) for u in reported) for key in keys}
    last = reported[-1]
    return total, sum(int(last.get(key, 0)) for key in ("input", "cache_read", "cache_write"))


def recorded_answer(client: RpcClient, session_id: str, submission: dict[str, Any]) -> Recorded:
    """What the submission's execution recorded: the assistant entries after the submission's user entry
    on the session's path, up to when its outcome was recorded (later turns come after that)."""
    entry_id = submission.get("entry_id")
    if entry_id is None:
        return Recorded(response="", passes=0, question=None)
    until = float(submission.get("updated_at", 0.0)) if submission.get("state") in SETTLED else float("inf")
    later: list[dict[str, Any]] = []
    cursor: str | None = None
    found = False
    while not found:
        params: dict[str, Any] = {"session_id": session_id, "limit": HISTORY_PAGE}
        if cursor is not None:
            params["cursor"] = cursor
        page = client.call("session.history", params)
        for entry in page["items"]:  # newest first
            if entry["id"] == entry_id:
                found = True
                break
            later.append(entry)
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    if not found:  # the head was moved off that turn meanwhile: nothing of it is on the path
        return Recorded(response="", passes=0, question=None)
    mine = [entry for entry in reversed(later) if float(entry["created_at"]) <= until]
    assistant = [entry for entry in mine if entry["kind"] == "assistant"]
    questions = [entry["text"] for entry in mine if entry["kind"] == "question"]
    usage, context_tokens = _usage_of(assistant)
    return Recorded(
        response="\n".join(entry["text"] for entry in assistant if entry["text"]),
        passes=len(assistant),
        question=questions[-1] if questions else None,
        usage=usage,
        context_tokens=context_tokens,
    )


def _execution_state(submission: dict[str, Any], streamer_state: str | None) -> str | None:
    if submission.get("execution_id") is None:
        return None
    state = str(submission.get("state"))
    if state in ("completed", "failed", "interrupted", "timed_out", "suspended"):
        return state
    return streamer_state or "running"


def run_chat(
    profile: Profile,
    text: str,
    *,
    session_id: str | None,
    role: str | None,
    as_json: bool,
    timeout: float | None,
    stream: bool,
) -> int:
    from anyy.cli.rpc import profile_client

    with profile_client(profile) as client:
        if session_id is None:
            session = client.call("session.create", {"role": role or "default"})
            session_id = str(session["id"])
            if not as_json:
                click.echo(f"session {session_id} (new, role {session['role']})", err=True)
        if stream:
            client.call("events.subscribe", {"session_id": session_id})
        sent: dict[str, Any] | None = None
        streamer = None
        try:  # Ctrl+C from here on stops the waiting only, whenever it comes
            submission = sent = client.call("session.send", {"session_id": session_id, "text": text})
            if stream:
                out = sys.stdout

                def write(chunk: str) -> None:
                    out.write(chunk)
                    out.flush()

                streamer = Streamer(client=client, submission_id=submission["id"], write=write)
            waited = wait_for_outcome(client, submission, timeout, streamer)
        except KeyboardInterrupt:
            if sent is None:
                click.echo(
                    "stopped (Ctrl+C) before the Gateway acknowledged your message: it may or may not be queued;"
                    f" look with `anyy sessions show {session_id} --profile {profile.name}`",
                    err=True,
                )
                return EXIT_CTRL_C
            submission = sent
            if streamer is not None and streamer.streamed:
                click.echo()
            click.echo(
                f"stopped waiting (Ctrl+C): your message goes on in the Gateway (submission {submission['id']} "
                f"in session {session_id}); follow it with `anyy sessions show {session_id} --profile "
                f"{profile.name}`",
                err=True,
            )
            return EXIT_CTRL_C
        submission = waited.submission
        recorded = recorded_answer(client, session_id, submission)
        execution_id = submission.get("execution_id")
        execution = (
            None
            if execution_id is None or not as_json
            else client.call("session.execution", {"session_id": session_id, "execution_id": execution_id})
        )
    state = str(submission.get("state"))
    if waited.timed_out and state not in SETTLED:
        result, code = "timeout", EXIT_TIMEOUT
    else:
        result, code = OUTCOMES.get(state, ("timeout", EXIT_TIMEOUT))
    execution_id = submission.get("execution_id")
    if as_json:
        from anyy.cli.output import echo_json

        record: dict[str, Any] = {
            "session_id": session_id,
            "submission": {"id": submission["id"], "state": state},
            "execution": None if execution is None else {"id": execution["id"], "state": execution["state"]},
            "passes": recorded.passes if execution is None else execution["passes"],
            "result": result,
            "response": recorded.response,
            "usage": recorded.usage,
            "context_tokens": recorded.context_tokens,
            "exit_code": code,
        }
        if submission.get("error"):
            record["error"] = submission["error"]
        if recorded.question is not None and result == "suspended":
            record["question"] = recorded.question
        echo_json(record)
    else:
        streamed = streamer.streamed if streamer is not None else ""
        if streamed:
            if not streamed.endswith("\n"):
                click.echo()
        elif recorded.response and (result != "suspended" or recorded.response != recorded.question):
            click.echo(recorded.response)
    _explain(
        profile,
        session_id,
        submission=submission,
        result=result,
        recorded=recorded,
        timeout=timeout,
        as_json=as_json,
    )
    return code


def _explain(
    profile: Profile,
    session_id: str,
    *,
    submission: dict[str, Any],
    result: str,
    recorded: Recorded,
    timeout: float | None,
    as_json: bool,
) -> None:
    """What happened and what to do next, for every outcome but success (on stderr; the question itself
    goes to stdout, it is what the agent said, unless stdout carries the JSON object)."""
    execution_id = submission.get("execution_id")
    if result == "suspended":
        if recorded.question and not as_json:
            click.echo(recorded.question)
        if recorded.question and recorded.question.startswith("Approval needed:"):
            click.echo(
                f"the agent waits for your approval of a tool call (session {session_id}, execution "
                f"{execution_id}); answer with the RPC session.approve "
                f'{{"session_id": "{session_id}", "execution_id": "{execution_id}", "decision": "once"}} '
                '(or "session", or "deny").',
                err=True,
            )
            return
        click.echo(
            f"the agent asks a question and waits for your answer (session {session_id}, execution "
            f"{execution_id}); answer it with the RPC session.answer "
            f'{{"session_id": "{session_id}", "execution_id": "{execution_id}", "text": "YOUR ANSWER"}}. '
            "Until then, new messages to this session wait behind the question.",
            err=True,
        )
    elif result == "failed":
        click.echo(f"error: the answer failed: {submission.get('error') or 'no error recorded'}", err=True)
    elif result == "interrupted":
        why = submission.get("error")
        click.echo(f"interrupted: the answer was stopped before it finished{f' ({why})' if why else ''}", err=True)
    elif result in ("cleared", "cancelled"):
        click.echo(
            f"your message was removed from the session's queue ({result}) before it started: nothing answered "
            f"it. Its text is kept in submission {submission['id']}; send it again to have it answered.",
            err=True,
        )
    elif result == "timeout":
        waited = f" after {timeout:g} s" if timeout is not None else ""
        click.echo(
            f"timeout: stopped waiting{waited} (submission {submission['id']} is {submission.get('state')}); "
            f"the work goes on in the Gateway: follow it with `anyy sessions show {session_id} --profile "
            f"{profile.name}`",
            err=True,
        )


@click.command("chat", help=CHAT_HELP, short_help="Send one message and wait for its answer.")
@click.argument("text")
@click.option("--session", "session_id", metavar="ID", default=None, help="Send to this session (its next turn).")
@click.option("--role", metavar="NAME", default=None, help="Role of the new session (default: 'default').")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: ids, states, passes, result, response.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop waiting after this long (exit 7); the work goes on in the Gateway.",
)
@click.option(
    "--stream/--no-stream", default=None, help="Stream the answer as it comes (default: when stdout is a terminal)."
)
@with_profile
@click.pass_context
def chat(
    ctx: click.Context,
    *,
    profile: Profile,
    text: str,
    session_id: str | None,
    role: str | None,
    as_json: bool,
    timeout: float | None,
    stream: bool | None,
) -> None:
    if role is not None and session_id is not None:
        raise click.UsageError(
            f"--role applies to a new session only: session {session_id} keeps its own role. Drop --role to "
            "continue that session, or drop --session to start a new one with that role.",
            ctx,
        )
    if not text.strip():
        raise click.UsageError('the message is empty: give the text to send, e.g. anyy chat "hello"', ctx)
    if as_json:
        stream = False  # stdout carries the JSON object only
    elif stream is None:
        stream = sys.stdout.isatty()
    from commons.jsonrpc import RpcError

    try:
        code = run_chat(
            profile, text, session_id=session_id, role=role, as_json=as_json, timeout=timeout, stream=stream
        )
    except RpcError as exc:
        raise ChatError(exc.message) from None
    ctx.exit(code)
