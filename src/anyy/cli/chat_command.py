"""``anyy chat [--session ID | --role NAME] [--json] [--timeout S] "…"``: one turn through the Gateway
(SPEC C1-C7, B3, X3). How it follows its own turn: :mod:`anyy.cli.chat_follow`."""

from __future__ import annotations

import sys
import uuid
from typing import TYPE_CHECKING, Any, NoReturn

import click

from anyy.cli.context import with_profile

if TYPE_CHECKING:
    from anyy.api.params import SendParams
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


def _stdout_writer() -> Any:
    out = sys.stdout

    def write(chunk: str) -> None:
        out.write(chunk)
        out.flush()

    return write


def _send_and_wait(
    client: Client, profile: Profile, session_id: str, text: str, *, timeout: float | None, stream: bool
) -> tuple[Waited, Streamer | None] | int:
    """Send the message and wait for its outcome; the exit status instead when Ctrl+C stopped the waiting."""
    from anyy.api import methods as m
    from anyy.api.params import SendParams, SubscribeParams
    from anyy.cli.chat_follow import Streamer, wait_for_outcome
    from anyy.client.errors import GatewayUnavailable

    if stream:
        client.call(m.EVENTS_SUBSCRIBE, SubscribeParams(session_id=session_id))
    sent: Submission | None = None
    streamer = None
    # A key of our own: should the reply be lost, asking again with it says whether the message was taken (D8).
    params = SendParams(session_id=session_id, text=text, idempotency_key=uuid.uuid4().hex)
    try:  # Ctrl+C from here on stops the waiting only, whenever it comes
        try:
            sent = client.call(m.SESSION_SEND, params)
        except GatewayUnavailable:
            _ask_again(profile, params)  # raises: says whether the message was accepted
        if stream:
            streamer = Streamer(submission_id=sent.id, write=_stdout_writer())
        return wait_for_outcome(client, sent, timeout, streamer), streamer
    except KeyboardInterrupt:
        if sent is None:
            click.echo(
                "stopped (Ctrl+C) before the Gateway acknowledged your message: it may or may not be queued;"
                f" look with `anyy sessions show {session_id} --profile {profile.name}`",
                err=True,
            )
            return EXIT_CTRL_C
        if streamer is not None and streamer.streamed:
            click.echo()
        click.echo(
            f"stopped waiting (Ctrl+C): your message goes on in the Gateway (submission {sent.id} "
            f"in session {session_id}); follow it with `anyy sessions show {session_id} --profile "
            f"{profile.name}`",
            err=True,
        )
        return EXIT_CTRL_C


def _ask_again(profile: Profile, params: SendParams) -> NoReturn:
    """The connection dropped before the send's reply: ask again with the same key (a message already
    taken comes back as it is, one that was not is sent now, never twice) and say which it was."""
    from anyy.api import methods as m
    from anyy.client.errors import GatewayUnavailable
    from anyy.client.sync import profile_client

    session_id = params.session_id
    show = f"`anyy sessions show {session_id} --profile {profile.name}`"
    try:
        with profile_client(profile) as client:
            sent = client.call(m.SESSION_SEND, params)
    except GatewayUnavailable:
        raise ChatError(
            "the connection to the Gateway dropped while sending, and it does not answer now: whether your "
            f"message was accepted is unknown. Once it runs again, {show} tells."
        ) from None
    raise ChatError(
        f"the connection to the Gateway dropped while sending; asked again, it says your message was accepted "
        f"(submission {sent.id}, {sent.state}) and it goes on there: follow it with {show}"
    )


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
    }
    if submission.error:
        record["error"] = submission.error
    if recorded.question is not None and result == "suspended":
        record["question"] = recorded.question
    return record


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
    from anyy.api import methods as m
    from anyy.api.params import CreateParams, ExecutionRef
    from anyy.cli.chat_follow import recorded_answer
    from anyy.client.sync import profile_client

    with profile_client(profile) as client:
        if session_id is None:
            session = client.call(m.SESSION_CREATE, CreateParams(role=role or "default"))
            session_id = session.id
            if not as_json:
                click.echo(f"session {session_id} (new, role {session.role})", err=True)
        followed = _send_and_wait(client, profile, session_id, text, timeout=timeout, stream=stream)
        if isinstance(followed, int):
            return followed
        waited, streamer = followed
        submission = waited.submission
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
        streamed = streamer.streamed if streamer is not None else ""
        if streamed:
            if not streamed.endswith("\n"):
                click.echo()
        elif recorded.response and (result != "suspended" or recorded.response != recorded.question):
            click.echo(recorded.response)
    _explain(
        profile, session_id, submission=submission, result=result, recorded=recorded, timeout=timeout, as_json=as_json
    )
    return code


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
    execution_id = submission.execution_id
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
    from anyy.client.errors import CallFailed

    try:
        code = run_chat(
            profile, text, session_id=session_id, role=role, as_json=as_json, timeout=timeout, stream=stream
        )
    except CallFailed as exc:
        raise ChatError(exc.message) from None
    ctx.exit(code)
