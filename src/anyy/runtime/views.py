"""The runtime's objects as the wire shows them: domain structs converted into ``anyy.api`` types, at the
edge (the Gateway's results, the runtime's events). One place, so the contract and the domain can move
apart only where a test notices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from anyy import api
from anyy.api import sessions as wire
from anyy.api.entries import DATA_BY_KIND
from anyy.domain.entries import Entry
from anyy.domain.queue import Execution, Submission
from anyy.domain.sessions import Page, Session

T = TypeVar("T")


def convert(obj: Any, tp: type[T]) -> T:
    """Any domain struct (or a list of them) as the api type with the same fields."""
    return msgspec.convert(obj, tp, from_attributes=True)


def entry_view(entry: Entry) -> api.EntryView:
    label = entry.kind.label
    return api.EntryView(
        id=entry.id,
        parent=entry.parent,
        kind=label,  # type: ignore[arg-type]
        text=entry.text,
        data=msgspec.convert(entry.data, DATA_BY_KIND[label]),
        created_at=entry.created_at,
        object=entry.object,
    )


def entry_views(entries: Sequence[Entry]) -> list[api.EntryView]:
    return [entry_view(entry) for entry in entries]


def entry_page(page: Page[Entry]) -> wire.Page[api.EntryView]:
    return wire.Page(items=entry_views(page.items), next_cursor=page.next_cursor)


def session(found: Session) -> wire.Session:
    return convert(found, wire.Session)


def submission(found: Submission) -> wire.Submission:
    return convert(found, wire.Submission)


def submissions(found: Sequence[Submission]) -> list[wire.Submission]:
    return [submission(item) for item in found]


def execution(found: Execution) -> wire.Execution:
    return convert(found, wire.Execution)
