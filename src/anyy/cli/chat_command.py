"""``anyy chat [--session ID | --role NAME] [--json] [--timeout S] "…"``: one turn through the Gateway
(SPEC C1-C7, B3, X3, U4). How it follows its own turn: :mod:`anyy.cli.chat_follow`; the message from
stdin or a file, attachments, a new session's model and tools: :mod:`anyy.cli.chat_input`; answering a
waiting question: :mod:`anyy.cli.chat_answer`."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from anyy.cli.context import with_profile
from anyy.domain.pricing import format_usd

if TYPE_CHECKING:
    from anyy.api.entries import Attachment
    from anyy.api.params import NewSessionParams, SendParams
    from anyy.api.sessions import Execution, Submission
    from anyy.cli.chat_follow import Recorded, Streamer, Waited
    from anyy.client.sync import Client
    from anyy.profiles import Profile

EXIT_COMPLETED = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_SUSPENDED = 3
EXIT_FAILED = 4
EXIT_INTERRUPTED = 5
EXIT_REMOVED = 6
EXIT_TIMEOUT = 7
EXIT_UNKNOWN = 8  # the Gateway was lost mid-turn: the outcome is unknown
EXIT_BUDGET = 9  # a budget is spent (Y2): nothing more was sent to the model, the queue is kept
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
    "budget_exhausted": ("budget exhausted", EXIT_BUDGET),
}

CHAT_HELP = """Send one message and wait for its answer.

\b
  anyy chat "TEXT"                  a new session (--role NAME: with that role)
  anyy chat --session ID "TEXT"     the next turn of an existing session
  anyy chat - < FILE                the message from standard input (or --file FILE)
  anyy chat --session ID --answer "TEXT"
                                    answer the question the session waits on, then
                                    follow the resumed turn (an approval: once,
                                    session or deny)

Needs the profile's Gateway (`anyy gateway start`). On a terminal the answer is
streamed; otherwise it is printed once recorded. A new session's id is printed
on stderr. Ctrl+C or --timeout stops the waiting only: the Gateway goes on with
the message.

\b
Exit status:
  0  completed
  1  other errors (no Gateway, unknown session or role, ...)
  2  usage error
  3  suspended: the agent asked a question or waits for your approval of a tool
     call: answer with `anyy chat --session ID --answer TEXT`, or in the TUI
     (`anyy --resume ID`)
  4  failed (the error is printed)
  5  interrupted (stopped before it finished)
  6  removed from the queue before it started (cleared or cancelled)
  7  timeout (--timeout passed; the work goes on in the Gateway)
  8  unknown: the Gateway was lost mid-turn (the session id is kept in --json)
  130 Ctrl+C (the work goes on in the Gateway)
"""


class ChatError(click.ClickException):
    """A failure reported as ``error: …`` with exit status 1."""

    exit_code = EXIT_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


def _stdout_writer() -> Any:
    out = sys.stdout

    def write(chunk: str) -> None:
        out.write(chunk)
        out.flush()

    return write


@dataclass
class Lost:
    """The Gateway went away after the message was sent (or while it was being sent): outcome unknown."""

    submission: Submission | None
    why: str


@dataclass
class Turn:
    """What run_chat sends: the message and its attachments, or an answer to the waiting question."""

    text: str
    attachments: list[Attachment] = field(default_factory=list)
    answer: bool = False
    new: NewSessionParams | None = None  # a session to create with the message (U1), instead of one named
    created: Callable[[str], None] | None = None  # told the new session's id once the Gateway took the message


def _send_and_wait(
    client: Client, profile: Profile, session_id: str | None, turn: Turn, *, timeout: float | None, stream: bool
) -> tuple[Waited, Streamer | None] | Lost | int:
    """Send the message and wait for its outcome; the exit status instead when Ctrl+C stopped the waiting.
    Without ``session_id``, the send creates ``turn.new`` with the message, at once (U1)."""
    from anyy.api import methods as m
    from anyy.api.params import SendParams, SubscribeParams
    from anyy.cli.chat_answer import answer_question, await_resumed
    from anyy.cli.chat_follow import Follower, Streamer, wait_for_outcome
    from anyy.client.errors import GatewayUnavailable

    sent: Submission | None = None
    params: SendParams | None = None  # set as the message goes out: from then on it may be taken
    streamer = None
    try:  # Ctrl+C from here on stops the waiting only, whenever it comes
        if turn.answer:
            resumed, sent = answer_question(client, session_id or "", turn.text)  # answers name their session
        else:
            # For retry notices too; a session not made yet: every session's events (its own are picked out).
            client.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session_id))
            # A key of our own: should the reply be lost, asking again with it tells whether the message was
            # taken, and never queues it twice, nor makes its new session twice (D8).
            params = SendParams(
                session_id=session_id,
                new=turn.new if session_id is None else None,
                text=turn.text,
                attachments=turn.attachments,
                idempotency_key=uuid.uuid4().hex,
            )
            try:
                sent = client.call(m.SESSION_SEND, params)
            except GatewayUnavailable as exc:
                return Lost(submission=_ask_again(profile, params), why=str(exc))
            if turn.created is not None and session_id is None:
                turn.created(sent.session_id)
        if stream:
            streamer = Streamer(submission_id=sent.id, write=_stdout_writer())
        follower = Follower(submission_id=sent.id, streamer=streamer, say=lambda line: click.echo(line, err=True))
        if turn.answer:
            await_resumed(client, resumed, follower)
        return wait_for_outcome(client, sent, timeout, follower), streamer
    except GatewayUnavailable as exc:
        return Lost(submission=sent, why=str(exc))
    except KeyboardInterrupt:
        if streamer is not None and streamer.streamed:
            click.echo()
        settled = _settled(profile, sent, params, answering=turn.answer)
        _say_stopped(profile, settled.submission.session_id if settled.submission else session_id, settled)
        return EXIT_CTRL_C


@dataclass
class Settled:
    """What is known of the message once Ctrl+C stopped the waiting."""

    submission: Submission | None
    sent: bool  # False: it never left (Ctrl+C came first); with no submission and sent: unknown
    answer: bool = False  # an answer to the waiting question (session.answer has no idempotency key)


def _settled(profile: Profile, sent: Submission | None, params: SendParams | None, *, answering: bool) -> Settled:
    """Ctrl+C came while the send's reply was awaited: ask again with the message's idempotency key on a new
    connection (the first one may be cut mid-frame): the Gateway returns the submission it took, or takes the
    message now, never twice (D8). Only a Gateway that does not answer leaves it unknown."""
    if sent is not None or answering:
        return Settled(submission=sent, sent=True, answer=answering)
    if params is None:
        return Settled(submission=None, sent=False)
    try:
        return Settled(submission=_ask_again(profile, params), sent=True)
    except KeyboardInterrupt:  # a second Ctrl+C: stop asking
        return Settled(submission=None, sent=True)


def _say_stopped(profile: Profile, session_id: str | None, settled: Settled) -> None:
    """The one line Ctrl+C ends with: what became of the message, and where to follow it (no session id:
    a new session's first message, whose session is not known to exist)."""
    look = _look(profile, session_id)
    submission = settled.submission
    if submission is not None:
        click.echo(
            f"stopped waiting (Ctrl+C): your message goes on in the Gateway (submission {submission.id} "
            f"in session {session_id}); follow it with {look}",
            err=True,
        )
    elif settled.answer:
        click.echo(
            f"stopped (Ctrl+C) while your answer was being given: if the session no longer waits for it "
            f"({look}), it was taken and the turn goes on in the Gateway",
            err=True,
        )
    elif not settled.sent:
        where = f"in session {session_id}" if session_id else "and no session was created"
        click.echo(f"stopped (Ctrl+C) before your message was sent: nothing was queued {where}", err=True)
    else:
        click.echo(
            "stopped (Ctrl+C) before the Gateway acknowledged your message, and it could not be asked again: "
            f"it may or may not be queued; look with {look}",
            err=True,
        )


def _look(profile: Profile, session_id: str | None) -> str:
    if session_id is None:
        return f"`anyy sessions list --profile {profile.name}`"
    return f"`anyy sessions show {session_id} --profile {profile.name}`"


def _ask_again(profile: Profile, params: SendParams) -> Submission | None:
    """The connection dropped before the send's reply: ask again with the same key on a new connection (a
    message already taken comes back as it is, one that was not is sent now, never twice). None when no
    Gateway answers: whether the message was taken is unknown then."""
    from anyy.api import methods as m
    from anyy.client.errors import GatewayError
    from anyy.client.sync import profile_client

    try:
        with profile_client(profile) as client:
            return client.call(m.SESSION_SEND, params)
    except GatewayError:
        return None


def _outcome(waited: Waited) -> tuple[str, int]:
    state = waited.submission.state
    if waited.timed_out and state not in OUTCOMES:
        return "timeout", EXIT_TIMEOUT
    return OUTCOMES.get(state, ("timeout", EXIT_TIMEOUT))


def _json_record(
    session_id: str, submission: Submission, execution: Execution | None, recorded: Recorded, *, result: str, code: int
) -> dict[str, Any]:
    """What ``--json`` prints (ameesh reads it: its keys stay as they are)."""
    usage = recorded.usage
    record: dict[str, Any] = {
        "session_id": session_id,
        "submission": {"id": submission.id, "state": submission.state},
        "execution": None if execution is None else {"id": execution.id, "state": execution.state},
        "passes": recorded.passes if execution is None else execution.passes,
        "result": result,
        "response": recorded.response,
        "usage": None
        if usage is None
        else {
            "input": usage.input,
            "output": usage.output,
            "cache_read": usage.cache_read,
            "cache_write": usage.cache_write,
        },
        "context_tokens": recorded.context_tokens,
        "exit_code": code,
        # What the turn's model calls cost (Y3): nano-dollars of the priced ones, and how many had no price.
        "cost": {
            "nano": recorded.cost,
            "usd": format_usd(recorded.cost, unpriced=recorded.unpriced)
            if recorded.cost is not None
            else ("unpriced" if recorded.unpriced else ""),
            "unpriced": recorded.unpriced,
        },
    }
    if submission.error:
        record["error"] = submission.error
    if recorded.question is not None and result == "suspended":
        record["question"] = recorded.question
    return record


@dataclass
class Setup:
    """--provider, --model, --tools/--no-tools and --attach: applied before the message goes in."""

    provider: str | None = None
    model: str | None = None
    tools: list[str] | None = None
    attach: tuple[Path, ...] = ()
    # The workspace (W1), absolute: a new session's (the current directory, or --cwd); for an existing session
    # only with --cwd (it moves there); None: it keeps its own.
    workspace: str | None = None


def _prepare(client: Client, session_id: str, setup: Setup, *, answering: bool) -> list[Attachment]:
    from anyy.cli.chat_input import configure_session

    configure_session(
        client, session_id, provider=setup.provider, model=setup.model, tools=setup.tools, workspace=setup.workspace
    )
    return _uploads(client, setup) if not answering else []


def _uploads(client: Client, setup: Setup) -> list[Attachment]:
    from anyy.cli.chat_input import upload

    return [upload(client, path) for path in setup.attach]


def _new_turn(client: Client, text: str, role: str | None, setup: Setup, *, as_json: bool) -> Turn:
    """A new session's first message (U1): files are uploaded first, then one ``session.send`` creates the
    session with its role, model and tools and takes the message, or, refused (an unknown model or tool),
    creates nothing: a failed or killed command leaves no empty session behind."""
    from anyy.api.params import NewSessionParams

    role_name = role or "default"
    new = NewSessionParams(
        role=role_name,
        provider=setup.provider,
        model=setup.model,
        tools=setup.tools,
        workspace=setup.workspace,  # W1: where the user typed the command, or --cwd
    )

    def created(session_id: str) -> None:
        if not as_json:
            click.echo(f"session {session_id} (new, role {role_name})", err=True)

    return Turn(text=text, attachments=_uploads(client, setup), new=new, created=created)


def run_chat(
    profile: Profile,
    text: str,
    *,
    session_id: str | None,
    role: str | None,
    as_json: bool,
    timeout: float | None,
    stream: bool,
    setup: Setup | None = None,
    answer: bool = False,
) -> int:
    from anyy.api import methods as m
    from anyy.api.params import ExecutionRef
    from anyy.cli.chat_follow import recorded_answer
    from anyy.cli.chat_input import say_what_waits
    from anyy.client.sync import profile_client

    setup = setup or Setup()
    with profile_client(profile) as client:
        if session_id is None:
            turn = _new_turn(client, text, role, setup, as_json=as_json)
        else:
            say_what_waits(client, session_id, answering=answer)
            attachments = _prepare(client, session_id, setup, answering=answer)
            turn = Turn(text=text, attachments=attachments, answer=answer)
        followed = _send_and_wait(client, profile, session_id, turn, timeout=timeout, stream=stream)
        if isinstance(followed, int):
            return followed
        if isinstance(followed, Lost):
            known = followed.submission.session_id if followed.submission is not None else session_id
            return _lost(profile, known, followed, as_json=as_json)
        waited, streamer = followed
        submission = waited.submission
        session_id = submission.session_id
        recorded = recorded_answer(client, session_id, submission)
        execution = None
        if submission.execution_id is not None and as_json:
            ref = ExecutionRef(session_id=session_id, execution_id=submission.execution_id)
            execution = client.call(m.SESSION_EXECUTION, ref)
    result, code = _outcome(waited)
    if as_json:
        from anyy.cli.output import echo_json

        echo_json(_json_record(session_id, submission, execution, recorded, result=result, code=code))
    else:
        _print_answer(streamer, recorded, result)
    _explain(
        profile, session_id, submission=submission, result=result, recorded=recorded, timeout=timeout, as_json=as_json
    )
    return code


def _print_answer(streamer: Streamer | None, recorded: Recorded, result: str) -> None:
    """The answer on stdout: ended with a newline if it was streamed, else printed whole (a question that
    is the whole answer is printed once, by _explain)."""
    streamed = streamer.streamed if streamer is not None else ""
    if streamed:
        if not streamed.endswith("\n"):
            click.echo()
    elif recorded.response and (result != "suspended" or recorded.response != recorded.question):
        click.echo(recorded.response)


def _lost(profile: Profile, session_id: str | None, lost: Lost, *, as_json: bool) -> int:
    """The Gateway went away mid-turn: say what is known (the session, the submission if acknowledged)."""
    submission = lost.submission
    if as_json:
        from anyy.cli.output import echo_json

        echo_json(
            {
                "session_id": session_id,
                "submission": None if submission is None else {"id": submission.id, "state": "unknown"},
                "execution": None,
                "passes": 0,
                "result": "unknown",
                "response": "",
                "usage": None,
                "context_tokens": None,
                "exit_code": EXIT_UNKNOWN,
                "error": lost.why,
            }
        )
    acknowledged = (
        f"your message was accepted (submission {submission.id})"
        if submission is not None
        else "your message may or may not have been accepted"
    )
    click.echo(
        f"unknown: the Gateway was lost before the answer ended; {acknowledged}. A Gateway that restarts marks "
        f"unfinished work interrupted: look with {_look(profile, session_id)}; "
        f"start it again with `anyy gateway start --profile {profile.name}`, then go on with "
        f'`anyy chat --session {session_id or "ID"} "TEXT"`',
        err=True,
    )
    return EXIT_UNKNOWN


def _explain(
    profile: Profile,
    session_id: str,
    *,
    submission: Submission,
    result: str,
    recorded: Recorded,
    timeout: float | None,
    as_json: bool,
) -> None:
    """What happened and what to do next, for every outcome but success (on stderr; the question itself
    goes to stdout, it is what the agent said, unless stdout carries the JSON object)."""
    if result == "suspended":
        _explain_waiting(profile, session_id, execution_id=submission.execution_id, recorded=recorded, as_json=as_json)
    elif result == "failed":
        click.echo(f"error: the answer failed: {submission.error or 'no error recorded'}", err=True)
    elif result == "interrupted":
        why = submission.error
        click.echo(f"interrupted: the answer was stopped before it finished{f' ({why})' if why else ''}", err=True)
    elif result in ("cleared", "cancelled"):
        click.echo(
            f"your message was removed from the session's queue ({result}) before it started: nothing answered "
            f"it. Its text is kept in submission {submission.id}; send it again to have it answered.",
            err=True,
        )
    elif result == "timeout":
        waited = f" after {timeout:g} s" if timeout is not None else ""
        click.echo(
            f"timeout: stopped waiting{waited} (submission {submission.id} is {submission.state}); "
            f"the work goes on in the Gateway: follow it with `anyy sessions show {session_id} --profile "
            f"{profile.name}`",
            err=True,
        )


def _explain_waiting(
    profile: Profile, session_id: str, *, execution_id: str | None, recorded: Recorded, as_json: bool
) -> None:
    """A question or an approval waits: print it, and how to answer."""
    if recorded.question and not as_json:
        click.echo(recorded.question)
    where = f" --profile {profile.name}" if profile.name != "default" else ""
    if recorded.question and recorded.question.startswith("Approval needed:"):
        click.echo(
            f"the agent waits for your approval of a tool call (session {session_id}, execution "
            f"{execution_id}): answer with `anyy chat{where} --session {session_id} --answer once` (or "
            f"`--answer session` to allow it for the session, `--answer deny`), or open the session in "
            f"the TUI with `anyy{where} --resume {session_id}` (RPC: session.approve).",
            err=True,
        )
        return
    click.echo(
        f"the agent asks a question and waits for your answer (session {session_id}, execution "
        f'{execution_id}): answer with `anyy chat{where} --session {session_id} --answer "YOUR ANSWER"`, '
        f"or open the session in the TUI with `anyy{where} --resume {session_id}` (RPC: session.answer). "
        "Until then, new messages to this session wait behind the question.",
        err=True,
    )


def _checked(
    ctx: click.Context, *, session_id: str | None, role: str | None, answer: str | None, setup: Setup, text: str
) -> None:
    """Usage errors: options that contradict each other, an empty message."""
    if role is not None and session_id is not None:
        raise click.UsageError(
            f"--role applies to a new session only: session {session_id} keeps its own role. Drop --role to "
            "continue that session, or drop --session to start a new one with that role.",
            ctx,
        )
    if setup.tools is not None and session_id is not None:
        raise click.UsageError(
            "--tools and --no-tools choose the tools of a new session: drop --session, or change an existing "
            "session's tools with the RPC session.tools.configure",
            ctx,
        )
    if answer is not None:
        if session_id is None:
            raise click.UsageError("--answer needs --session ID: the session whose question you answer", ctx)
        if setup.attach:
            raise click.UsageError("--attach goes with a message, not with --answer", ctx)
        if not answer.strip():
            raise click.UsageError("the answer is empty: write the answer after --answer", ctx)
    elif not text.strip():
        raise click.UsageError(
            'the message is empty: give the text to send, e.g. anyy chat "hello" (or - to read it from standard '
            "input, or --file FILE)",
            ctx,
        )


@click.command("chat", help=CHAT_HELP, short_help="Send one message and wait for its answer.")
@click.argument("text", required=False)
@click.option("--session", "session_id", metavar="ID", default=None, help="Send to this session (its next turn).")
@click.option("--role", metavar="NAME", default=None, help="Role of the new session (default: 'default').")
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Read the message from this file (UTF-8 text) instead of TEXT.",
)
@click.option("--provider", metavar="NAME", default=None, help="The session's provider (this session only).")
@click.option("--model", metavar="NAME", default=None, help="The session's model (this session only).")
@click.option("--answer", metavar="TEXT", default=None, help="Answer the question the session waits on, then follow.")
@click.option(
    "--attach",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Attach this file to the message (repeatable); uploaded to the Gateway first.",
)
@click.option(
    "--cwd",
    "cwd",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The session's workspace, where its tools work (default for a new session: the current directory; "
    "with --session: move that idle session there).",
)
@click.option("--tools", metavar="A,B", default=None, help="A new session's tools, by name, separated by commas.")
@click.option("--no-tools", is_flag=True, help="A new session without tools.")
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
    text: str | None,
    session_id: str | None,
    role: str | None,
    file: Path | None,
    provider: str | None,
    model: str | None,
    answer: str | None,
    attach: tuple[Path, ...],
    tools: str | None,
    no_tools: bool,
    as_json: bool,
    timeout: float | None,
    stream: bool | None,
    cwd: Path | None,
) -> None:
    from anyy.cli.chat_input import read_message, tool_selection
    from anyy.client.workspace import client_workspace
    from anyy.domain.errors import InvalidInput

    try:  # W1: a new session works where the command was typed (or --cwd); an existing one moves only with --cwd
        workspace = client_workspace(cwd) if cwd is not None or session_id is None else None
    except InvalidInput as exc:
        raise click.UsageError(str(exc), ctx) from None
    tool_names = tool_selection(tools, no_tools, ctx)
    setup = Setup(provider=provider, model=model, tools=tool_names, attach=attach, workspace=workspace)
    if answer is not None and (text is not None or file is not None):
        raise click.UsageError("--answer replaces the message: give either TEXT (or --file) or --answer", ctx)
    message = answer if answer is not None else read_message(text, file, ctx)
    _checked(ctx, session_id=session_id, role=role, answer=answer, setup=setup, text=message)
    if as_json:
        stream = False  # stdout carries the JSON object only
    elif stream is None:
        stream = sys.stdout.isatty()
    from anyy.client.errors import CallFailed

    try:
        code = run_chat(
            profile,
            message,
            session_id=session_id,
            role=role,
            as_json=as_json,
            timeout=timeout,
            stream=stream,
            setup=setup,
            answer=answer is not None,
        )
    except CallFailed as exc:
        raise ChatError(exc.message) from None
    ctx.exit(code)
