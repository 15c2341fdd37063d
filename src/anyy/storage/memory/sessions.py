"""Sessions and entries of the in-memory store: create, list, fork, append, and read back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec

from anyy.domain import entry_ids
from anyy.domain.context import (
    CONTEXT_KINDS,
    ContextItem,
    ModelContext,
    assemble_context,
    carries_payload,
    compaction_cut,
)
from anyy.domain.entries import Entry, EntryKind, NewEntry, check_created_at, decode_data, encode_data
from anyy.domain.errors import InvalidInput
from anyy.domain.paging import check_limit, decode_cursor, encode_cursor
from anyy.domain.sessions import UNSET, NewSession, Page, Session, SessionKind, SessionPatch, Unset
from anyy.domain.tree import TreeRow, TreeView, build_tree
from anyy.storage import costs_sql, rules
from anyy.storage.memory.core import MemoryCore
from anyy.storage.memory.data import EntryRecord, ObjectRecord, SessionRecord, copied
from anyy.storage.objects import ObjectFiles
from commons.ids import new_id

_CONTEXT_KINDS = frozenset(CONTEXT_KINDS)


class Prepared(NamedTuple):
    kind: EntryKind
    text: str
    raw_data: str | None
    obj: str | None
    body: bytes | None  # a large body, to keep as an object
    refs: list[str]
    at: float | None = None  # the entry's own time (an imported entry's), else the append's


def _plain(value: Any) -> Any:
    """As a database keeps it: JSON values (tuples become lists, nothing shared with the caller)."""
    return msgspec.json.decode(msgspec.json.encode(value))


class SessionsPart(MemoryCore):
    # -- sessions ----------------------------------------------------------------------------------
    def create_session(self, new: NewSession) -> Session:
        self._check_open()
        rules.check_kind(new.kind)
        rules.check_modes(new.steering_mode, new.follow_up_mode)
        rules.check_workspace(new.workspace)
        return self._add_session(
            Session(
                id=new_id("ses"),
                kind=new.kind,
                title=new.title,
                role=new.role,
                provider=new.provider,
                model=new.model,
                effort=new.effort,
                tools=_plain(new.tools),
                steering_mode=new.steering_mode,
                follow_up_mode=new.follow_up_mode,
                goal=None,
                head=None,
                forked_from=None,
                created_at=self.clock(),
                updated_at=self.clock(),
                origin=new.origin,
                workspace=new.workspace,
            ),
            fork_point=None,
        )

    def _add_session(self, session: Session, *, fork_point: int | None) -> Session:
        data = self.data
        num = data.next_session
        if num > entry_ids.MAX_SESSION_NUMBER:
            raise InvalidInput("this profile has used every session number; start a new profile")
        data.next_session += 1
        data.sessions[session.id] = SessionRecord(num=num, session=session, fork_point=fork_point)
        data.nums[num] = session.id
        return copied(session)

    def get_session(self, session_id: str) -> Session:
        return copied(self._record(session_id).session)

    def list_sessions(
        self, *, kind: SessionKind | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Session]:
        self._check_open()
        rules.check_kind(kind)
        check_limit(limit)
        after: tuple[float, int] | None = None
        if cursor is not None:
            updated, num = decode_cursor(cursor, (int, float), int)
            after = (updated, num)
        found = sorted(
            (
                (record.session.updated_at, record.num, record)
                for record in self.data.sessions.values()
                if record.active and (kind is None or record.session.kind == kind)
            ),
            key=lambda item: (item[0], item[1]),
            reverse=True,
        )
        if after is not None:
            found = [item for item in found if (item[0], item[1]) < after]
        page = found[:limit]
        more = len(found) > limit
        next_cursor = encode_cursor(page[-1][0], page[-1][1]) if more else None
        return Page(items=[copied(item[2].session) for item in page], next_cursor=next_cursor)

    def update_session(self, session_id: str, patch: SessionPatch) -> Session:
        record = self._record(session_id)
        changes = patch.changes()
        if not changes:
            return copied(record.session)
        goal = changes.get("goal")
        if goal is not None:
            rules.check_goal_state(goal.state)
        if "workspace" in changes:
            rules.check_workspace(changes["workspace"])
        session = record.session
        rules.check_modes(
            changes.get("steering_mode", session.steering_mode), changes.get("follow_up_mode", session.follow_up_mode)
        )
        for name, value in changes.items():
            setattr(session, name, _plain(value) if name == "tools" else copied(value))
        record.session.updated_at = self.clock()
        return copied(session)

    def set_head(self, session_id: str, entry_id: int | None) -> Session:
        record = self._record(session_id)
        if entry_id is not None and not self._in_tree(record, entry_id):
            raise rules.missing_entry(self.profile, session_id, entry_id)
        record.session.head = entry_id
        record.session.updated_at = self.clock()
        return copied(record.session)

    def fork_session(self, session_id: str, at: int | None = None, *, title: str | None = None) -> Session:
        record = self._record(session_id)
        original = record.session
        if at is not None and not self._in_tree(record, at):
            raise rules.missing_entry(self.profile, session_id, at)
        point = original.head if at is None else at
        now = self.clock()
        fork = msgspec.structs.replace(
            copied(original),
            id=new_id("ses"),
            title=title if title is not None else (f"{original.title} (fork)" if original.title else ""),
            goal=None,
            head=point,
            forked_from=session_id,
            created_at=now,
            updated_at=now,
            origin=None,
        )
        return self._add_session(fork, fork_point=point)

    # -- appending ---------------------------------------------------------------------------------
    def append_entries(
        self, session_id: str, entries: Sequence[NewEntry], *, expected_head: int | Unset | None = UNSET
    ) -> list[Entry]:
        self._check_open()
        if not entries:
            raise rules.nothing_to_append()
        prepared = [self._prepare(new) for new in entries]
        record = self._record(session_id)
        head = record.session.head
        if not isinstance(expected_head, Unset) and expected_head != head:
            raise rules.head_moved(session_id, expected_head, head)
        return self._append(record, prepared)

    def _prepare(self, new: NewEntry) -> Prepared:
        """Check and encode an entry before anything is kept: a refused batch leaves nothing behind."""
        kind = rules.parse_entry_kind(new.kind)
        raw = encode_data(kind, new.data)
        rules.check_text(new.text)
        try:
            encoded = new.text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise rules.invalid_text(exc) from None
        refs: list[str] = []
        obj = body = None
        if len(encoded) > self.body_threshold:
            obj, body = ObjectFiles.hash_of(encoded), encoded
            refs.append(obj)
        if kind == EntryKind.USER and raw is not None:
            for attachment in msgspec.json.decode(raw).get("attachments", []):
                if attachment["object"] not in self.data.objects:
                    raise rules.unknown_attachment(attachment["object"])
                refs.append(attachment["object"])
        at = None if new.created_at is None else check_created_at(new.created_at)
        return Prepared(kind, new.text, None if raw is None else raw.decode(), obj, body, refs, at)

    def _append(self, record: SessionRecord, prepared: Sequence[Prepared]) -> list[Entry]:
        """Append children of the head and move the head to the last one (everything checked already)."""
        if record.last_seq + len(prepared) > entry_ids.MAX_SEQ:
            raise InvalidInput(f"session {record.session.id} is full ({entry_ids.MAX_SEQ} entries); fork it")
        now = self.clock()
        parent = record.session.head
        out: list[Entry] = []
        for item in prepared:
            if item.body is not None and item.obj is not None and item.obj not in self.data.objects:
                self.data.objects[item.obj] = ObjectRecord(
                    data=item.body, media_type=rules.BODY_MEDIA_TYPE, created_at=now
                )
            record.last_seq += 1
            entry = Entry(
                id=entry_ids.make_entry_id(record.num, record.last_seq),
                parent=parent,
                kind=item.kind,
                text=item.text,
                data=decode_data(item.raw_data),
                created_at=now if item.at is None else item.at,
                object=item.obj,
            )
            self.data.entries[entry.id] = EntryRecord(entry=entry, raw_data=item.raw_data, refs=item.refs)
            record.own.append(entry.id)
            out.append(copied(entry))
            parent = entry.id
        record.session.head = parent
        record.session.updated_at = now
        calls = costs_sql.call_rows(record.session.id, out)
        if calls:  # Y1, and the budgets' running totals (Y2)
            self.data.model_calls.extend(calls)
            for scope, period, amount in costs_sql.spend_rows(record.session.id, record.session.origin, calls):
                self.data.budget_spend[(scope, period)] = self.data.budget_spend.get((scope, period), 0) + amount
        return out

    # -- reading -----------------------------------------------------------------------------------
    def get_entry(self, session_id: str, entry_id: int) -> Entry:
        record = self._record(session_id)
        if not self._in_tree(record, entry_id):
            raise rules.missing_entry(self.profile, session_id, entry_id)
        return copied(self.data.entries[entry_id].entry)

    def path(self, session_id: str, *, to: int | None = None) -> list[Entry]:
        record = self._record(session_id)
        if to is not None and not self._in_tree(record, to):
            raise rules.missing_entry(self.profile, session_id, to)
        leaf = record.session.head if to is None else to
        return [copied(self.data.entries[i].entry) for i in self._path_ids(leaf)]

    def history(self, session_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Entry]:
        check_limit(limit)
        record = self._record(session_id)
        ids = self._path_ids(record.session.head)
        if cursor is not None:
            (before,) = decode_cursor(cursor, int)
            if before not in ids:
                raise rules.stale_cursor()
            ids = ids[: ids.index(before)]
        newest = ids[::-1][: limit + 1]
        items = [copied(self.data.entries[i].entry) for i in newest[:limit]]
        return Page(items=items, next_cursor=encode_cursor(items[-1].id) if len(newest) > limit else None)

    def tree(self, session_id: str) -> TreeView:
        record = self._record(session_id)
        rows: list[TreeRow] = []
        for entry_id in sorted(self._tree_ids(record)):
            found = self.data.entries[entry_id]
            entry = found.entry
            label_data = found.raw_data if entry.kind == EntryKind.LABEL else None
            rows.append((entry_id, entry.parent, int(entry.kind), entry.text[:200], label_data))
        head = record.session.head
        return build_tree(rows, head, set(self._path_ids(head)))

    def context(self, session_id: str) -> ModelContext:
        record = self._record(session_id)
        head = record.session.head
        path = [self.data.entries[i] for i in self._path_ids(head)]
        compactions = [found for found in path if found.entry.kind == EntryKind.COMPACTION]
        summary = applied = None
        if compactions:
            newest = compactions[-1]  # the one nearest the head
            applied, summary = newest.entry.id, newest.entry.text
            cut = compaction_cut(newest.raw_data or "{}")
            starts = [index for index, found in enumerate(path) if found.entry.id == cut]
            if starts:
                path = path[starts[0] :]
        items: list[ContextItem] = []
        after_compaction = 0  # index of the first item that follows the applied compaction
        for found in path:
            entry = found.entry
            if entry.id == applied:
                after_compaction = len(items)
            if entry.kind in _CONTEXT_KINDS:
                raw = found.raw_data if carries_payload(entry.kind, found.raw_data) else None
                items.append((entry.id, int(entry.kind), entry.text, raw))
        return assemble_context(
            items,
            summary=summary,
            compaction=applied,
            head=head,
            after_compaction=after_compaction,
            response_data=lambda entry_id: self.data.entries[entry_id].raw_data,
        )
