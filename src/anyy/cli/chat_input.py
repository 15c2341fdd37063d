"""What ``anyy chat`` sends besides the text typed on the command line (SPEC U4, M1, M3, N5):

- the message from standard input (``anyy chat -``) or a file (``--file F``): no argument-length limit;
- files attached with ``--attach F``, uploaded through the Gateway's ``POST /upload`` route first;
- a new session's model (``--provider``, ``--model``) and tools (``--tools a,b``, ``--no-tools``), set
  through ``session.settings`` and ``session.tools.configure`` before its first message;
- what an existing session says before the message goes in: a question waiting for an answer, a last
  turn that failed (its durable notice).
"""

from __future__ import annotations

import http.client
import json
import mimetypes
import sys
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from anyy.api.entries import Attachment
    from anyy.client.sync import Client

UPLOAD_TIMEOUT = 120.0


def read_message(text: str | None, file: Path | None, ctx: click.Context) -> str:
    """The message: the TEXT argument, all of standard input for ``-``, or the file's text."""
    if text is not None and file is not None:
        raise click.UsageError("give the message once: as TEXT, as - (standard input), or with --file", ctx)
    if file is not None:
        try:
            return file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise click.UsageError(
                f"--file {file}: not UTF-8 text; send a binary file with --attach instead", ctx
            ) from None
        except OSError as exc:
            raise click.UsageError(f"--file {file}: {exc.strerror or exc}", ctx) from None
    if text == "-":
        return sys.stdin.read()
    return text or ""


def tool_selection(tools: str | None, no_tools: bool, ctx: click.Context) -> list[str] | None:
    """The tool names ``--tools``/``--no-tools`` select for a new session; None: the profile's."""
    if no_tools and tools is not None:
        raise click.UsageError("--tools and --no-tools contradict each other: give one", ctx)
    if no_tools:
        return []
    if tools is None:
        return None
    names = [name.strip() for name in tools.split(",") if name.strip()]
    if not names:
        raise click.UsageError("--tools: give tool names separated by commas (or --no-tools for none)", ctx)
    return names


def configure_session(
    client: Client,
    session_id: str,
    *,
    provider: str | None,
    model: str | None,
    tools: list[str] | None,
    workspace: str | None = None,
) -> None:
    """Apply --provider/--model (this session only, M1), --cwd (its workspace, W1: an idle session only)
    and --tools (a new session's selection, M3)."""
    from anyy.api import methods as m
    from anyy.api.params import SettingsParams, ToolsParams

    if provider is not None or model is not None or workspace is not None:
        params = SettingsParams(session_id=session_id, provider=provider, model=model, workspace=workspace)
        client.call(m.SESSION_SETTINGS, params)
    if tools is not None:
        client.call(m.SESSION_TOOLS_CONFIGURE, ToolsParams(session_id=session_id, enabled=tools))


def upload(client: Client, path: Path) -> Attachment:
    """Send one file to the Gateway's upload route; the attachment to put in session.send."""
    from anyy.api.entries import Attachment
    from anyy.client.errors import GatewayUnavailable
    from anyy.domain.errors import InvalidInput

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"--attach {path}: {exc.strerror or exc}") from None
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    address = client.address
    target = f"/upload?name={urllib.parse.quote(path.name)}"
    headers = {"Authorization": f"Bearer {address.token}", "Content-Type": media_type}
    context = address.ssl_context()
    conn = (
        http.client.HTTPSConnection(address.dialled, address.port, timeout=UPLOAD_TIMEOUT, context=context)
        if context is not None
        else http.client.HTTPConnection(address.host, address.port, timeout=UPLOAD_TIMEOUT)
    )
    try:
        conn.request("POST", target, body=data, headers=headers)
        reply = conn.getresponse()
        body = reply.read()
    except OSError as exc:
        raise GatewayUnavailable(f"the upload of {path} to the Gateway failed: {exc}") from None
    finally:
        conn.close()
    try:
        found = json.loads(body)
    except ValueError:
        found = {}
    if reply.status != 200:
        said = found.get("error") if isinstance(found, dict) else None
        raise InvalidInput(f"--attach {path}: the Gateway refused it ({reply.status}): {said or 'no reason given'}")
    return Attachment(object=found["object"], name=found["name"], media_type=found["media_type"], size=found["size"])


def say_what_waits(client: Client, session_id: str, *, answering: bool) -> None:
    """Before a message goes to an existing session: a question still waiting (the message would wait
    behind it) and a last turn that failed, on stderr."""
    from anyy.api import methods as m
    from anyy.api.entries import NoticeData
    from anyy.api.params import PageParams, SessionRef

    view = client.call(m.SESSION_GET, SessionRef(session_id=session_id))
    if view.waiting_question is not None and not answering:
        click.echo(
            f"this session waits for your answer to: {view.waiting_question.question}\n"
            f"your message waits behind that question; answer it with "
            f'`anyy chat --session {session_id} --answer "YOUR ANSWER"`, or open it with `anyy --resume {session_id}`',
            err=True,
        )
    if view.running_execution is not None or view.waiting_question is not None:
        return
    latest = client.call(m.SESSION_HISTORY, PageParams(session_id=session_id, limit=1)).items
    data = latest[0].data if latest else None
    if isinstance(data, NoticeData) and data.failed_execution:
        retry = " (a transient error: sending again may work)" if data.retryable else ""
        click.echo(f"the last turn of this session failed. {latest[0].text}{retry}", err=True)
