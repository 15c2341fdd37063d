"""anyy, through its command line only (ameesh never imports anyy): ``anyy chat [--session ID] --json TEXT``.

The first turn has no ``--session`` (anyy chooses the id, printed in the JSON object); later turns pass it.
anyy has no per-turn model flag: the agent's ``model`` setting names the anyy *profile* (``--profile``),
passed on every turn since session ids belong to a profile; effort is the profile's business. Exit
statuses: 0 completed, 3 suspended (a question for the user), 4 failed, 5 interrupted, 6 cleared from the
queue, 7 timeout. The JSON object's ``context_tokens`` (what the turn's last model call re-read) is the
context size; an older anyy without it leaves it unknown (None). The command is ``AMEESH_ANYY_BIN``
(default ``anyy``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ameesh.harnesses import Retry, TurnRequest, TurnResult, cue_for, kept_unanswered, tail

# anyy chat's refusals for a cause in the set-up, which a person fixes (no retry helps): no Gateway started
# for the profile, no such profile
SET_UP_ERRORS = ("no Gateway is running", "does not exist (no folder")

EXIT_MEANINGS = {
    3: "suspended",
    4: "failed",
    5: "interrupted",
    6: "cleared",
    7: "timeout",
    8: "unknown, the Gateway was lost mid-turn",
}


class AnyyHarness:
    name = "anyy"

    # anyy session ids belong to a profile (the agent's model setting): a new profile needs a new session
    sessions_follow_model = True

    def __init__(self, binary: str | None = None, *, state_dir: Path | None = None) -> None:
        self.binary = binary or os.environ.get("AMEESH_ANYY_BIN") or "anyy"
        # which profile each session belongs to (a session id is known to its profile's Gateway only)
        self.profiles_file = state_dir / "anyy-sessions.json" if state_dir else None

    def _profiles(self) -> dict[str, str]:
        try:
            data = json.loads(self.profiles_file.read_text(encoding="utf-8")) if self.profiles_file else {}
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _remember(self, session_id: str, profile: str) -> None:
        known = self._profiles()
        if self.profiles_file is None or known.get(session_id) == profile:
            return
        self.profiles_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.profiles_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({**known, session_id: profile}), encoding="utf-8")
        os.replace(tmp, self.profiles_file)

    def new_session_id(self) -> str | None:
        return None  # anyy chooses the session id

    def session_exists(self, session_id: str, cwd: Path) -> bool:
        return True  # anyy keeps sessions in its Gateway; an id we hold is one it gave us

    def command(self, request: TurnRequest) -> list[str]:
        argv = [self.binary, "chat"]
        if request.model:
            argv += ["--profile", request.model]
        if request.session_id and not request.new_session:
            argv += ["--session", request.session_id]
        return [*argv, "--json", request.prompt]

    def environment(self) -> dict[str, str]:
        return {}

    def session_in(self, line: str) -> str | None:
        return None  # anyy prints its JSON record (with the session id) at the end of the turn

    def fatal_in(self, line: str) -> str | None:
        return None  # one JSON record at the end of the turn

    def prepare_retry(self, session_id: str, cwd: Path, prompt: str) -> Retry:
        """A failed execution keeps its user entry in anyy's session, and ``anyy chat`` cannot rewind: when
        the current path keeps the prompt unanswered (``anyy sessions show --json``), a cue to answer it is
        sent instead of a second copy (naming it when later messages were played after it)."""
        import subprocess

        profile = self._profiles().get(session_id)
        argv = [self.binary, "sessions", "show", session_id, "--json", "--entries", "20"]
        try:
            done = subprocess.run(  # noqa: S603 - the harness's own command line
                [*argv, *(["--profile", profile] if profile else [])],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            entries = json.loads(done.stdout).get("entries") if done.returncode == 0 else None
        except (OSError, ValueError, AttributeError, subprocess.TimeoutExpired):
            entries = None
        roles = {"user": "user", "assistant": "agent"}
        turns = [
            (roles[str(e.get("kind"))], str(e.get("text") or ""))
            for e in entries or []
            if isinstance(e, dict) and e.get("kind") in roles
        ]
        return cue_for(kept_unanswered(turns, prompt), prompt)

    def parse(self, request: TurnRequest, returncode: int, stdout: str, stderr: str) -> TurnResult:
        record: dict[str, Any] | None = None
        for line in stdout.splitlines() or [stdout]:
            try:
                candidate = json.loads(line)
            except ValueError:
                continue
            if isinstance(candidate, dict) and "session_id" in candidate:
                record = candidate
        if record is None:
            try:
                whole = json.loads(stdout)
            except ValueError:
                whole = None
            record = whole if isinstance(whole, dict) else None
        if record is None:
            return TurnResult(
                "failed",
                session_id=request.session_id,
                error=f"anyy: no JSON answer (exit {returncode}): {tail(stderr)}",
                deterministic=any(words in stderr for words in SET_UP_ERRORS),  # no outage to wait out
            )
        sid = record.get("session_id") if isinstance(record.get("session_id"), str) else request.session_id
        if sid and request.model:
            self._remember(sid, request.model)
        if returncode != 0 or record.get("result") != "completed":
            word = EXIT_MEANINGS.get(returncode) or str(record.get("result") or f"exit {returncode}")
            detail = record.get("error") or record.get("question") or tail(stderr)
            outcome = "timeout" if returncode == 7 else "failed"
            return TurnResult(outcome, session_id=sid, error=f"anyy: {word}" + (f": {detail}" if detail else ""))
        passes = record.get("passes")
        usage = dict(record["usage"]) if isinstance(record.get("usage"), dict) else {}
        if passes is not None:
            usage["passes"] = passes
        context = record.get("context_tokens")
        return TurnResult(
            "ok",
            session_id=sid,
            text=str(record.get("response") or ""),
            usage=usage,
            context_tokens=context if isinstance(context, int) else None,
        )

    def follow_move(self, old: Path, new: Path) -> str:
        return ""  # anyy's sessions are the Gateway's, not a directory's

    def attach_command(self, session_id: str, cwd: Path) -> list[str]:
        return [self.binary, "--resume", session_id]
