"""What an import must write, given what an earlier import of the same source already wrote (SPEC I3).

The source's tree is walked from the root; each entry is looked for among the children of its parent's
counterpart in the session's tree (same kind, text and payload). Entries found are not written again;
from the first one missing, the rest of its step and everything under it is new. So importing the
same file twice writes nothing, and a file that grew writes only what it gained — on the branch where
it grew, beside whatever the person added to the session meanwhile.

New entries are grouped into :class:`Write` s: a chain of entries appended under one parent in one
call (a linear source is one write, whatever its length).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from anyy.domain.entries import Entry, NewEntry, decode_data, encode_data
from anyy.domain.imports.model import ImportedSession


@dataclass
class Write:
    """Append ``entries`` as one chain under ``parent``: an existing entry's id (``None``: the root), or,
    with ``after`` set, the entry at ``after = (write index, position)`` of an earlier write."""

    parent: int | None
    after: tuple[int, int] | None
    entries: list[NewEntry] = field(default_factory=list)


@dataclass
class Plan:
    writes: list[Write]
    found: dict[str, int]  # step key -> the id of its last entry, for steps already in the session
    ends: dict[str, tuple[int, int]]  # step key -> (write, position) of its last entry, for new steps
    head: str | None  # the step the source was left at

    @property
    def new_entries(self) -> int:
        return sum(len(w.entries) for w in self.writes)


def _same(entry: Entry, new: NewEntry) -> bool:
    if int(entry.kind) != int(new.kind) or entry.text != new.text:
        return False
    return entry.data == decode_data(encode_data(entry.kind, new.data))


def plan(session: ImportedSession, existing: Sequence[Entry]) -> Plan:
    """Pure: the writes that make ``existing`` (a session's whole tree, parents first) hold ``session``."""
    children: dict[int | None, list[Entry]] = {}
    for entry in existing:
        children.setdefault(entry.parent, []).append(entry)
    claimed: set[int] = set()
    found: dict[str, int] = {}
    ends: dict[str, tuple[int, int]] = {}
    writes: list[Write] = []
    for step in session.steps:
        anchor: Any  # ("entry", id | None) or ("new", (write, position))
        if step.parent is None:
            anchor = ("entry", None)
        elif step.parent in found:
            anchor = ("entry", found[step.parent])
        elif step.parent in ends:
            anchor = ("new", ends[step.parent])
        else:
            anchor = ("entry", None)  # a parser never does this: parents come first
        position = 0
        if anchor[0] == "entry":
            parent_id = anchor[1]
            while position < len(step.entries):
                match = next(
                    (
                        c
                        for c in children.get(parent_id, ())
                        if c.id not in claimed and _same(c, step.entries[position])
                    ),
                    None,
                )
                if match is None:
                    break
                claimed.add(match.id)
                parent_id = match.id
                position += 1
            if position == len(step.entries):
                found[step.key] = parent_id
                continue
            anchor = ("entry", parent_id)
        rest = step.entries[position:]
        last = writes[-1] if writes else None
        if anchor[0] == "new" and last is not None and anchor[1] == (len(writes) - 1, len(last.entries) - 1):
            last.entries.extend(rest)  # the chain goes on: one append
        elif anchor[0] == "new":
            writes.append(Write(parent=None, after=anchor[1], entries=list(rest)))
        else:
            writes.append(Write(parent=anchor[1], after=None, entries=list(rest)))
        ends[step.key] = (len(writes) - 1, len(writes[-1].entries) - 1)
    head = session.head or (session.steps[-1].key if session.steps else None)
    return Plan(writes=writes, found=found, ends=ends, head=head)
