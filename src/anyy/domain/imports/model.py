"""What a parser makes of a source session: a tree of *steps* (one source record each: a prompt, one
answer with its tool calls, the results of calls…), each step a short list of anyy entries.

A step is keyed by the source's own id for the record, so the same file parsed twice gives the same
tree, and a source that grew gives the same tree plus new steps (SPEC I3). The entries of a step are
appended as one linear chain under the last entry of its parent step.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from anyy.domain.entries import EntryKind, NewEntry, NoticeData, ToolResultData
from anyy.domain.errors import InvalidInput

MAX_LINE_CHARS = 64 * 1024 * 1024  # one record of a session file; more is not a transcript
MAX_TITLE_CHARS = 120
# Terminal escape sequences (OSC titles and links, CSI colours and cursor moves, their one-byte C1 forms),
# then any other control character.
_ESCAPES = re.compile(
    r"(?:\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x9d[^\x07\x1b\x9c]*(?:\x07|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?)"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_decoder = msgspec.json.Decoder()


class SourceError(InvalidInput):
    """A source file that cannot be read as its format says: names the file, the line and the record."""

    def __init__(self, source: str, line: int, what: str, *, unit: str = "line") -> None:
        super().__init__(
            f"{source}, {unit} {line}: {what}; nothing of this session was imported (fix or remove the file)"
        )
        self.source = source
        self.line = line


@dataclass
class Step:
    key: str  # the source's id of the record (stable across imports)
    parent: str | None  # the key of the step it follows; None: the root
    entries: list[NewEntry]
    at: float | None = None  # the source's timestamp (seconds since the epoch)
    tag: str = ""  # the parser's own mark (Claude Code: the response id its answer pieces share)


@dataclass
class ImportedSession:
    format: str  # claude-code, codex, pi
    source_id: str  # the source's id of the conversation
    title: str = ""
    cwd: str | None = None
    steps: list[Step] = field(default_factory=list)  # parents before children
    head: str | None = None  # the key of the step the source was left at (default: the last step)
    records: int = 0  # records read
    unknown: dict[str, int] = field(default_factory=dict)  # record kinds not understood, counted
    started_at: float | None = None

    @property
    def origin(self) -> str:
        return f"{self.format}:{self.source_id}"

    def add(self, key: str, parent: str | None, entries: list[NewEntry], at: float | None = None) -> str | None:
        """Add a step (unless empty); returns the key later steps hang under (``parent`` when empty)."""
        if not entries:
            return parent
        self.steps.append(Step(key=key, parent=parent, entries=entries, at=at))
        return key


def clean_title(text: str) -> str:
    """A title from untrusted text: control characters (terminal escape codes among them) and runs of
    white space become one space; cut to a list's width."""
    flat = " ".join(_CONTROL.sub(" ", _ESCAPES.sub(" ", text)).split())
    return flat if len(flat) <= MAX_TITLE_CHARS else flat[: MAX_TITLE_CHARS - 1] + "…"


def json_lines(lines: Iterable[str], source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a JSONL file, numbered from 1; blank lines skipped. A line that is not a JSON
    object (a file cut short, a stray write) is a :class:`SourceError` naming it."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            raise SourceError(source, number, f"a record of {len(line)} characters (at most {MAX_LINE_CHARS})")
        try:
            record = _decoder.decode(line)
        except (msgspec.DecodeError, RecursionError, ValueError) as exc:
            raise SourceError(source, number, f"not a JSON record ({exc})") from None
        if not isinstance(record, dict):
            raise SourceError(source, number, f"a JSON {type(record).__name__}, not a record")
        yield number, record


def timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO 8601 string or a number of milliseconds; None if neither."""
    if isinstance(value, bool):
        return None
    seconds: float | None = None
    if isinstance(value, (int, float)):
        seconds = float(value) / 1000.0 if value > 1e11 else float(value)
    elif isinstance(value, str) and value:
        try:
            seconds = datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError):
            return None
    return seconds if seconds is not None and 0 <= seconds < 1e11 else None  # NaN and the absurd: unknown


def object_of(value: Any) -> dict[str, Any]:
    """A JSON object field of an untrusted record, or {} when it is something else."""
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str:
    """A string field of an untrusted record, or "" when it is something else."""
    return value if isinstance(value, str) else ""


def args_of(value: Any) -> dict[str, Any]:
    """Tool-call arguments: a JSON object, or a JSON string holding one; anything else is kept whole."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = _decoder.decode(value)
        except (msgspec.DecodeError, RecursionError, ValueError):
            return {"raw": value}
        return decoded if isinstance(decoded, dict) else {"value": decoded}
    return {} if value is None else {"value": value}


def notice(text: str, level: str = "info") -> NewEntry:
    return NewEntry(kind=EntryKind.NOTICE, text=text, data=NoticeData(level=level))  # type: ignore[arg-type]


def _call_id(entry: NewEntry) -> str:
    data = entry.data
    return str(getattr(data, "call_id", "") if not isinstance(data, dict) else data.get("call_id", ""))


def pair_tool_results(session: ImportedSession) -> None:
    """Make every tool call answered before anything else follows it, as both provider kinds require
    when the session is continued (SPEC I2): a result the source never recorded (an interrupted turn)
    becomes a synthetic one; a result whose call is not on the path becomes a notice."""
    pending: dict[str | None, list[tuple[str, str]]] = {None: []}  # by step key: calls still unanswered
    for step in session.steps:
        waiting = list(pending.get(step.parent, []))
        out: list[NewEntry] = []
        for entry in step.entries:
            if entry.kind == EntryKind.TOOL_RESULT:
                call = _call_id(entry)
                match = next((w for w in waiting if w[0] == call), None)
                if match is None:
                    out.append(notice(f"tool result for a call the source does not show ({call}):\n{entry.text}"))
                    continue
                waiting.remove(match)
                out.append(entry)
                continue
            if waiting and entry.kind != EntryKind.TOOL_CALL:
                out.extend(_synthetic(waiting))
                waiting = []
            if entry.kind == EntryKind.TOOL_CALL:
                data = entry.data
                name = str(getattr(data, "name", "") if not isinstance(data, dict) else data.get("name", ""))
                waiting.append((_call_id(entry), name))
            out.append(entry)
        step.entries = out
        pending[step.key] = waiting
    parents = {step.parent for step in session.steps}
    for step in session.steps:
        if step.key not in parents and pending.get(step.key):
            step.entries.extend(_synthetic(pending[step.key]))


def _synthetic(waiting: list[tuple[str, str]]) -> list[NewEntry]:
    return [
        NewEntry(
            kind=EntryKind.TOOL_RESULT,
            text="(no result was recorded for this call in the imported session)",
            data=ToolResultData(call_id=call_id, name=name, is_error=True, synthetic=True),
        )
        for call_id, name in waiting
    ]


def finish(session: ImportedSession) -> ImportedSession:
    """The last touches every format shares: tool results paired, unknown record kinds kept as one
    notice (counted, never silently dropped), a title."""
    pair_tool_results(session)
    for step in session.steps:  # each entry keeps the time of the record it came from
        for entry in step.entries:
            if entry.created_at is None:
                entry.created_at = step.at
    if session.unknown:
        counted = ", ".join(f"{kind}: {n}" for kind, n in sorted(session.unknown.items()))
        last = session.steps[-1].key if session.steps else None
        at = session.steps[-1].at if session.steps else None
        key = session.head or last
        session.add(
            "unknown-records", key, [notice(f"records of kinds this import does not read, left out: {counted}")], at
        )
        if session.head is not None:
            session.head = "unknown-records"
    if not session.title:
        first = next((e.text for s in session.steps for e in s.entries if e.kind == EntryKind.USER and e.text), "")
        session.title = first
    session.title = clean_title(session.title)
    return session
