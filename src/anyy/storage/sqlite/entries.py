"""Appending entries and reading them back: paths, history pages, the tree, the model context."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec

from anyy.domain import entry_ids
from anyy.domain.context import (
    ContextItem,
    ModelContext,
    assemble_context,
    compaction_cut,
    newest_on_path,
    runs_from,
)
from anyy.domain.entries import Entry, EntryKind, NewEntry, check_created_at, decode_data, encode_data
from anyy.domain.errors import InvalidInput
from anyy.domain.paging import check_limit, decode_cursor, encode_cursor
from anyy.domain.sessions import UNSET, Page, Unset
from anyy.domain.tree import TreeRow, TreeView, build_tree
from anyy.storage import costs_sql, rules
from anyy.storage.context_sql import CONTEXT_KIND_LIST, context_columns
from anyy.storage.rows import ENTRY_COLUMNS, entry_from_row
from anyy.storage.sqlite.core import ACTIVITY_RESOLUTION, AppendState, StoreCore

_CONTEXT_ITEMS = (
    f"SELECT {context_columns('', 'instr')} FROM entries WHERE id BETWEEN ? AND ? AND kind IN ({CONTEXT_KIND_LIST})"
)


class Prepared(NamedTuple):
    """An entry checked and encoded before its transaction; a large body already in objects/."""

    kind: EntryKind
    text: str  # the whole body
    stored_text: str | None  # what the row keeps: None when the body went to objects/
    data: str | None
    obj: str | None
    refs: list[str]
    body: bytes | None  # the encoded body to store in objects/ (large bodies only)
    at: float | None = None  # the entry's own time (an imported entry's), else the append's


class EntriesPart(StoreCore):
    # -- writing ---------------------------------------------------------------------------------
    def append_entries(
        self, session_id: str, entries: Sequence[NewEntry], *, expected_head: int | Unset | None = UNSET
    ) -> list[Entry]:
        if not entries:
            raise rules.nothing_to_append()
        prepared = self._prepare_entries(entries)
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")  # the hot path: what self._tx() does, without its overhead
        try:
            appended = self._append_prepared(session_id, prepared, expected_head=expected_head)
            conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            self._discard_bodies(prepared)
            raise self._translate(exc) from exc
        return appended

    def _prepare_entries(self, entries: Sequence[NewEntry]) -> list[Prepared]:
        """Validate and encode every entry, then store the large bodies in objects/ (durably), all before
        the transaction: an invalid entry leaves no file behind."""
        prepared = [self._prepare(new) for new in entries]
        try:
            for item in prepared:
                if item.body is not None:
                    self.objects.put(item.body)
        except OSError as exc:
            self._discard_bodies(prepared)
            raise self._translate(exc) from exc
        return prepared

    def _discard_bodies(self, prepared: Sequence[Prepared]) -> None:
        """After a failed append: remove the body files that no committed entry references."""
        for item in prepared:
            if item.obj is not None and self._one("SELECT 1 FROM objects WHERE hash = ?", (item.obj,)) is None:
                self.objects.remove(item.obj)

    def _prepare(self, new: NewEntry) -> Prepared:
        kind = new.kind if type(new.kind) is EntryKind else rules.parse_entry_kind(new.kind)  # the hot path
        data = encode_data(kind, new.data)
        refs: list[str] = []
        stored: str | None = new.text
        obj = None
        if not isinstance(new.text, str):
            rules.check_text(new.text)
        # Only a text that may exceed the threshold is encoded here (a character is at most 4 bytes);
        # invalid Unicode in a shorter one is refused when SQLite binds it (see ``translate``).
        body = b""
        if len(new.text) * 4 > self.body_threshold:
            try:
                body = new.text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise rules.invalid_text(exc) from None
        large = len(body) > self.body_threshold
        if large:
            obj = self.objects.hash_of(body)
            stored = None
            refs.append(obj)
        if kind == EntryKind.USER and data is not None:
            refs.extend(att["object"] for att in msgspec.json.decode(data).get("attachments", []))
        at = None if new.created_at is None else check_created_at(new.created_at)
        return Prepared(
            kind, new.text, stored, data.decode() if data is not None else None, obj, refs, body if large else None, at
        )

    def _append_prepared(
        self,
        session_id: str,
        prepared: Sequence[Prepared],
        *,
        expected_head: int | Unset | None = UNSET,
    ) -> list[Entry]:
        """Inside a transaction: append children of the head and move the head to the last one."""
        conn = self.conn
        num = self._nums.get(session_id) or self._session_num(session_id)
        state = self._append_state(session_id, num)
        stored_head, last_id, run = state.stored_head, state.last_id, state.run
        head = last_id if stored_head is None else (None if stored_head == 0 else stored_head)
        if not isinstance(expected_head, Unset) and expected_head != head:
            raise rules.head_moved(session_id, expected_head, head)
        now = self.clock()
        parent = head
        seq = 1 if last_id is None else entry_ids.seq_of(last_id) + 1
        if seq + len(prepared) - 1 > entry_ids.MAX_SEQ:
            raise InvalidInput(f"session {session_id} is full ({entry_ids.MAX_SEQ} entries); fork it")
        rows, out, parent, run = self._rows_for(prepared, num, parent, seq=seq, run=run, now=now)
        insert = (
            "INSERT INTO entries (id, parent, run, kind, text, data, obj, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        if len(rows) == 1:
            conn.execute(insert, rows[0])
        else:
            conn.executemany(insert, rows)
        calls = costs_sql.call_rows(session_id, out)
        if calls:  # what the model calls cost, in the entries' own transaction (Y1), and budgets' totals (Y2)
            conn.executemany(costs_sql.INSERT_CALL, calls)
            costs_sql.add_spend(conn, session_id, calls)
        self._head_is_last(state, num, now)
        state.last_id, state.run = parent, run
        if self._unindexed is not None:
            self._unindexed.add(num)
        return out

    def _rows_for(
        self, prepared: Sequence[Prepared], num: int, parent: int | None, *, seq: int, run: int | None, now: float
    ) -> tuple[list[tuple[Any, ...]], list[Entry], int | None, int | None]:
        """The rows of ``prepared`` as children of ``parent`` from ``seq`` on (cross links and object
        references written), the entries they are, and the last id and run."""
        base = entry_ids.make_entry_id(num, 0)
        rows: list[tuple[Any, ...]] = []
        out: list[Entry] = []
        for item in prepared:
            entry_id = base | seq
            if parent is None or parent != entry_id - 1 or seq == 1:
                run = entry_id  # a new linear run starts here
                if parent is not None and entry_ids.owner_number(parent) != num:
                    self.conn.execute("INSERT INTO cross_links (child, parent) VALUES (?, ?)", (entry_id, parent))
            for ref in item.refs:
                self._add_object_ref(entry_id, ref, created=item.obj == ref)
            at = now if item.at is None else item.at
            rows.append((entry_id, parent, run, item.kind, item.stored_text, item.data, item.obj, at))
            data = decode_data(item.data) if item.data is not None else {}
            out.append(
                Entry(
                    id=entry_id,
                    parent=parent,
                    kind=item.kind,
                    text=item.text,
                    data=data,
                    created_at=at,
                    object=item.obj,
                )
            )
            parent = entry_id
            seq += 1
        return rows, out, parent, run

    def _head_is_last(self, state: AppendState, num: int, now: float) -> None:
        """The head now is the last entry appended (NULL). The row is written only when that changes
        something: after navigation or a fork, when another session is ahead in "most recent first", or
        when its activity time is a second old."""
        if (
            state.stored_head is not None
            or self._top_of_kind.get(state.kind) != num
            or now - state.updated_at >= ACTIVITY_RESOLUTION
            or now < state.updated_at
        ):
            self.conn.execute("UPDATE sessions SET head = NULL, updated_at = ? WHERE num = ?", (now, num))
            state.stored_head, state.updated_at = None, now
            self._top_of_kind[state.kind] = num

    def _add_object_ref(self, holder: int, obj: str, *, created: bool) -> None:
        conn = self.conn
        if created:
            conn.execute(
                "INSERT OR IGNORE INTO objects (hash, size, media_type, created_at) VALUES (?, ?, ?, ?)",
                (obj, self.objects.path(obj).stat().st_size, rules.BODY_MEDIA_TYPE, self.clock()),
            )
        elif conn.execute("SELECT 1 FROM objects WHERE hash = ?", (obj,)).fetchone() is None:
            raise rules.unknown_attachment(obj)
        conn.execute("INSERT OR IGNORE INTO object_refs (holder, obj) VALUES (?, ?)", (holder, obj))

    # -- reading ---------------------------------------------------------------------------------
    def _load_entries(self, runs: Sequence[tuple[int, int]], *, descending: bool = False) -> list[Entry]:
        order = "DESC" if descending else "ASC"
        entries = []
        for lo, hi in reversed(runs) if descending else runs:
            for row in self.conn.execute(
                f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id BETWEEN ? AND ? ORDER BY id {order}", (lo, hi)
            ):
                entries.append(entry_from_row(row, text=self._object_text(row[5]) if row[5] else None))
        return entries

    def _num_and_head(self, session_id: str) -> tuple[int, int | None]:
        num = self._session_num(session_id)
        return num, self._head_of(num)

    def get_entry(self, session_id: str, entry_id: int) -> Entry:
        num, head = self._num_and_head(session_id)
        if not isinstance(entry_id, int) or not self._in_tree(num, head, entry_id):
            raise self._missing_entry(session_id, entry_id)
        return self._load_entries([(entry_id, entry_id)])[0]

    def path(self, session_id: str, *, to: int | None = None) -> list[Entry]:
        num, head = self._num_and_head(session_id)
        leaf = head if to is None else to
        if to is not None and not self._in_tree(num, head, to):
            raise self._missing_entry(session_id, to)
        return self._load_entries(self._path_runs(leaf))

    def history(self, session_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Entry]:
        check_limit(limit)
        _num, head = self._num_and_head(session_id)
        runs = self._path_runs(head)
        if cursor is not None:
            (before,) = decode_cursor(cursor, int)
            for index, (lo, hi) in enumerate(runs):
                if isinstance(before, int) and lo <= before <= hi:
                    runs = runs[:index] + ([(lo, before - 1)] if before > lo else [])
                    break
            else:
                raise rules.stale_cursor()
        items: list[Entry] = []
        for lo, hi in reversed(runs):
            need = limit + 1 - len(items)
            for row in self.conn.execute(
                f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id BETWEEN ? AND ? ORDER BY id DESC LIMIT ?",
                (lo, hi, need),
            ):
                items.append(entry_from_row(row, text=self._object_text(row[5]) if row[5] else None))
            if len(items) > limit:
                break
        more = len(items) > limit
        items = items[:limit]
        return Page(items=items, next_cursor=encode_cursor(items[-1].id) if more else None)

    def tree(self, session_id: str) -> TreeView:
        num, head = self._num_and_head(session_id)
        columns = f"id, parent, kind, substr(text, 1, 200), CASE kind WHEN {int(EntryKind.LABEL)} THEN data END, obj"
        rows: dict[int, TreeRow] = {}
        for lo, hi in self._tree_intervals(num, head):
            for entry_id, parent, kind, text, data, obj in self.conn.execute(
                f"SELECT {columns} FROM entries WHERE id BETWEEN ? AND ?", (lo, hi)
            ):
                # A large body lives in objects/: its beginning is the preview.
                preview = text if obj is None else self._object_text(obj)[:200]
                rows[entry_id] = (entry_id, parent, kind, preview, data)
        path: set[int] = set()
        for run_lo, run_hi in self._path_runs(head):
            path.update(range(run_lo, run_hi + 1))
        return build_tree(sorted(rows.values()), head, path)

    def context(self, session_id: str) -> ModelContext:
        _num, head = self._num_and_head(session_id)
        conn = self.conn
        runs = self._path_runs(head)
        compactions: dict[int, tuple[str | None, str, str | None]] = {}
        for lo, hi in runs:
            for cid, text, data, obj in conn.execute(
                "SELECT id, text, data, obj FROM entries WHERE kind = 7 AND id BETWEEN ? AND ?", (lo, hi)
            ):
                compactions[cid] = (text, data, obj)
        applied = newest_on_path(runs, compactions)
        summary = None
        if applied is not None:
            text, data, obj = compactions[applied]
            summary = text if obj is None else self._object_text(obj)
            runs = runs_from(runs, compaction_cut(data))
        items: list[ContextItem] = []
        large: dict[int, str] = {}
        after_compaction = 0  # index of the first item that follows the applied compaction
        for lo, hi in runs:
            if applied is not None and lo <= applied <= hi:
                (before,) = conn.execute(
                    f"SELECT count(*) FROM entries WHERE id BETWEEN ? AND ? AND kind IN ({CONTEXT_KIND_LIST})",
                    (lo, applied),
                ).fetchone()
                after_compaction = len(items) + before
            items += conn.execute(_CONTEXT_ITEMS, (lo, hi)).fetchall()
            large.update(
                conn.execute("SELECT id, obj FROM entries WHERE obj IS NOT NULL AND id BETWEEN ? AND ?", (lo, hi))
            )
        if large:
            items = [(i[0], i[1], self._object_text(large[i[0]]), i[3]) if i[0] in large else i for i in items]

        def response_data(entry_id: int) -> str | None:
            found = self._one("SELECT data FROM entries WHERE id = ?", (entry_id,))
            return None if found is None else found[0]

        return assemble_context(
            items,
            summary=summary,
            compaction=applied,
            head=head,
            after_compaction=after_compaction,
            response_data=response_data,
        )
