"""Appending entries and reading them back: paths, history pages, the tree, the model context.

Reads of a path send its runs as two arrays and get every entry back in one query, in path order.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import msgspec
import psycopg

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
from anyy.storage.postgres.core import ACTIVITY_RESOLUTION, PgCore, hash_of
from anyy.storage.rows import ENTRY_COLUMNS, entry_from_row

# The runs of a path, as a relation: (lo, hi, i) with i the run's place on the path.
_RUNS = (
    "unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS r(lo, hi, i) JOIN entries e ON e.id BETWEEN r.lo AND r.hi"
)
_ENTRY_COLUMNS = ", ".join(f"e.{column.strip()}" for column in ENTRY_COLUMNS.split(","))
# A page of history, newest first, without sorting the path: the runs come newest first, each read backwards
# through the primary key up to the page's size; the server knows the runs' order (their ordinality) and
# stops reading runs once the page is full.
_HISTORY_PAGE = (
    "SELECT x.* FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS r(lo, hi, i) CROSS JOIN LATERAL "
    f"(SELECT {_ENTRY_COLUMNS} FROM entries e WHERE e.id BETWEEN r.lo AND r.hi ORDER BY e.id DESC LIMIT %s) x "
    "ORDER BY r.i, x.id DESC LIMIT %s"
)
_CONTEXT_COLUMNS = context_columns("e.", "strpos")
_CONTEXT_WHERE = f" WHERE e.kind IN ({CONTEXT_KIND_LIST})"
# The entries of a context that are not items, each kind read through its partial index (one condition
# with OR would read every row of the path on the server: ~20 ms at 100k entries).
_CONTEXT_COMPACTIONS = f"SELECT e.id, e.text, e.data, e.obj FROM {_RUNS} WHERE e.kind = {int(EntryKind.COMPACTION)}"
_CONTEXT_BODIES = f"SELECT e.id, e.obj FROM {_RUNS} WHERE e.obj IS NOT NULL"
# Rows of a context read per round of the stream: the client decodes a round while the server reads the next.
CONTEXT_CHUNK = 1_000
_RESET = "SELECT NULL"
# Reading a result in chunks needs libpq 17 and psycopg 3.2; with older ones the read is whole, as before.
_CHUNKS = bool(getattr(psycopg, "capabilities", None) and psycopg.capabilities.has_stream_chunked())
_APPEND_STATE = (
    "SELECT s.num, s.head, s.updated_at, e.id, e.run, (SELECT o.num FROM sessions o "
    "WHERE o.status = 'active' AND o.kind = s.kind ORDER BY o.updated_at DESC, o.num DESC LIMIT 1) "
    "FROM sessions s LEFT JOIN entries e ON e.id = (SELECT max(id) FROM entries "
    f"WHERE id BETWEEN s.num << {entry_ids.SEQ_BITS} AND (s.num << {entry_ids.SEQ_BITS}) | {entry_ids.MAX_SEQ}) "
    "WHERE s.id = %s AND s.status = 'active'"
)
# Taken first, in a statement of its own: the state read next is then of after any writer that held it.
_LOCK_SESSION = "SELECT 1 FROM sessions WHERE id = %s AND status = 'active' FOR UPDATE"
_INSERT_CALL = costs_sql.INSERT_CALL.replace("?", "%s")
_INSERT_ENTRY = (
    "INSERT INTO entries (id, parent, run, kind, text, data, obj, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)


class Prepared(NamedTuple):
    """An entry checked and encoded before its transaction."""

    kind: EntryKind
    text: str  # the whole body
    stored_text: str | None  # what the row keeps: None when the body is an object
    data: str | None
    obj: str | None
    refs: list[str]
    body: bytes | None  # the body to store as an object (large bodies, and texts holding NUL)
    at: float | None = None  # the entry's own time (an imported entry's), else the append's


def runs_arrays(runs: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    return [lo for lo, _ in runs], [hi for _, hi in runs]


def _ascending(runs: Sequence[tuple[int, int]]) -> bool:
    """Whether the runs go up in ids, as every path the store writes does (a child is written after its
    parent, a fork after its source): then path order is id order."""
    return all(hi < lo for (_, hi), (lo, _) in itertools.pairwise(runs))


class EntriesPart(PgCore):
    # -- writing ---------------------------------------------------------------------------------
    def append_entries(
        self, session_id: str, entries: Sequence[NewEntry], *, expected_head: int | Unset | None = UNSET
    ) -> list[Entry]:
        if not entries:
            raise rules.nothing_to_append()
        prepared = [self._prepare(new) for new in entries]
        # The one-statement path cannot be fenced: a Gateway of a shared store takes the general one.
        one = prepared[0]
        # (An assistant entry may carry a model call's cost: its row is written in the general path.)
        simple = one.body is None and not one.refs and one.at is None and one.kind != EntryKind.ASSISTANT
        if len(prepared) == 1 and simple and self.member is None:
            return [self._append_one(session_id, prepared[0], expected_head)]
        # Pipelined: BEGIN, the lock and the read go in one round trip, the inserts and COMMIT in another.
        with self.conn.pipeline(), self._tx():
            return self._append_prepared(session_id, prepared, expected_head=expected_head)

    def _append_one(self, session_id: str, item: Prepared, expected_head: int | Unset | None) -> Entry:
        """The common append in one statement and one commit (``anyy_append_one`` in the first migration)."""
        now = self.clock()
        expected = None if isinstance(expected_head, Unset) else expected_head
        check = not isinstance(expected_head, Unset)
        try:
            row = self.conn.execute(
                "SELECT * FROM anyy_append_one(%s, %s, %s, %s, %s, %s, %s)",
                (session_id, int(item.kind), item.stored_text, item.data, now, check, expected),
            ).fetchone()
        except BaseException as exc:
            raise self._translate(exc) from exc
        if row is None:
            self._nums.pop(session_id, None)
            raise self._missing_session(session_id)
        num, entry_id, parent, ok = row
        self._nums[session_id] = num
        if not ok:
            if entry_id == -1:
                raise InvalidInput(f"session {session_id} is full ({entry_ids.MAX_SEQ} entries); fork it")
            raise rules.head_moved(session_id, expected, parent)
        self._note_unindexed(num)
        return Entry(
            id=entry_id,
            parent=parent,
            kind=item.kind,
            text=item.text,
            data=decode_data(item.data) if item.data is not None else {},
            created_at=now,
            object=None,
        )

    def _prepare(self, new: NewEntry) -> Prepared:
        kind = rules.parse_entry_kind(new.kind)
        data = encode_data(kind, new.data)
        rules.check_text(new.text)
        refs: list[str] = []
        stored: str | None = new.text
        obj = None
        body: bytes | None = None
        # A text that may exceed the threshold, or that holds NUL (which PostgreSQL text cannot), is an object.
        if len(new.text) * 4 > self.body_threshold or "\x00" in new.text:
            try:
                encoded = new.text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise self._translate(exc) from None
            if len(encoded) > self.body_threshold or "\x00" in new.text:
                body = encoded
                obj = hash_of(encoded)
                stored = None
                refs.append(obj)
        if kind == EntryKind.USER and data is not None:
            refs.extend(att["object"] for att in msgspec.json.decode(data).get("attachments", []))
        at = None if new.created_at is None else check_created_at(new.created_at)
        return Prepared(kind, new.text, stored, data.decode() if data is not None else None, obj, refs, body, at)

    def _append_prepared(
        self, session_id: str, prepared: Sequence[Prepared], *, expected_head: int | Unset | None = UNSET
    ) -> list[Entry]:
        """Inside a transaction: append children of the head and move the head to the last one."""
        conn = self.conn
        conn.execute(_LOCK_SESSION, (session_id,))
        row = conn.execute(_APPEND_STATE, (session_id,)).fetchone()
        if row is None:
            self._nums.pop(session_id, None)
            raise self._missing_session(session_id)
        num, stored_head, updated_at, last_id, run, most_recent = row
        self._nums[session_id] = num
        self._fence(num, session_id)
        head = last_id if stored_head is None else (None if stored_head == 0 else stored_head)
        if not isinstance(expected_head, Unset) and expected_head != head:
            raise rules.head_moved(session_id, expected_head, head)
        now = self.clock()
        parent = head
        seq = 1 if last_id is None else entry_ids.seq_of(last_id) + 1
        if seq + len(prepared) - 1 > entry_ids.MAX_SEQ:
            raise InvalidInput(f"session {session_id} is full ({entry_ids.MAX_SEQ} entries); fork it")
        base = entry_ids.make_entry_id(num, 0)
        rows: list[tuple[Any, ...]] = []
        out = []
        for item in prepared:
            entry_id = base | seq
            if parent is None or parent != entry_id - 1 or seq == 1:
                run = entry_id  # a new linear run starts here
                if parent is not None and entry_ids.owner_number(parent) != num:
                    conn.execute("INSERT INTO cross_links (child, parent) VALUES (%s, %s)", (entry_id, parent))
            if item.body is not None and item.obj is not None:
                conn.execute(
                    "INSERT INTO objects (hash, size, media_type, created_at, body) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (hash) DO NOTHING",
                    (item.obj, len(item.body), rules.BODY_MEDIA_TYPE, now, item.body),
                )
            for ref in item.refs:
                self._add_object_ref(entry_id, ref, created=item.obj == ref)
            at = now if item.at is None else item.at
            rows.append((entry_id, parent, run, int(item.kind), item.stored_text, item.data, item.obj, at))
            out.append(
                Entry(
                    id=entry_id,
                    parent=parent,
                    kind=item.kind,
                    text=item.text,
                    data=decode_data(item.data) if item.data is not None else {},
                    created_at=at,
                    object=item.obj,
                )
            )
            parent = entry_id
            seq += 1
        if len(rows) == 1:
            conn.execute(_INSERT_ENTRY, rows[0])
        else:
            with conn.cursor() as cur:
                cur.executemany(_INSERT_ENTRY, rows)
        calls = costs_sql.call_rows(session_id, out)
        if calls:  # what the model calls cost, in the entries' own transaction (Y1), and budgets' totals (Y2)
            with conn.cursor() as cur:
                cur.executemany(_INSERT_CALL, calls)
            costs_sql.add_spend(conn, session_id, calls, mark="%s")
        # As in the SQLite store: the session row is written only when that changes something.
        if stored_head is not None or most_recent != num or now - updated_at >= ACTIVITY_RESOLUTION or now < updated_at:
            conn.execute("UPDATE sessions SET head = NULL, updated_at = %s WHERE num = %s", (now, num))
        self._note_unindexed(num)
        return out

    def _note_unindexed(self, num: int) -> None:
        """A session appended messages the search index does not have yet (see the search part)."""

    def _add_object_ref(self, holder: int, obj: str, *, created: bool) -> None:
        conn = self.conn
        if not created and conn.execute("SELECT 1 FROM objects WHERE hash = %s", (obj,)).fetchone() is None:
            raise rules.unknown_attachment(obj)
        conn.execute(
            "INSERT INTO object_refs (holder, obj) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (holder, obj),
        )

    # -- reading ---------------------------------------------------------------------------------
    def _path_rows(self, columns: str, runs: Sequence[tuple[int, int]], where: str = "") -> list[tuple[Any, ...]]:
        """``columns`` (the first one ``e.id``) of the entries on ``runs``, in path order, the run's place
        last. Sorted here, not by the server: the rows come nearly in order (one index scan per run), which
        Python's sort finishes in linear time, where the server would sort a 100k path on disk."""
        if not runs:
            return []
        rows = self._all(f"SELECT {columns}, r.i FROM {_RUNS}{where}", runs_arrays(runs))
        if _ascending(runs):
            rows.sort()  # path order is id order: tuples of unique ids compare by their first item alone
        else:
            rows.sort(key=lambda row: (row[-1], row[0]))
        return rows

    def _load_entries(self, runs: Sequence[tuple[int, int]]) -> list[Entry]:
        return [
            entry_from_row(row[:-1], text=self._object_text(row[5]) if row[5] else None)
            for row in self._path_rows(_ENTRY_COLUMNS, runs)
        ]

    def _num_and_head(self, session_id: str) -> tuple[int, int | None]:
        num = self._session_num(session_id)
        return num, self._head_of(num)

    def get_entry(self, session_id: str, entry_id: int) -> Entry:
        num, head = self._num_and_head(session_id)
        if not self._valid_id(entry_id) or not self._in_tree(num, head, entry_id):
            raise self._missing_entry(session_id, entry_id)
        return self._load_entries([(entry_id, entry_id)])[0]

    @staticmethod
    def _valid_id(entry_id: object) -> bool:
        return isinstance(entry_id, int) and not isinstance(entry_id, bool) and 0 < entry_id < 1 << 53

    def path(self, session_id: str, *, to: int | None = None) -> list[Entry]:
        num, head = self._num_and_head(session_id)
        leaf = head if to is None else to
        if to is not None and (not self._valid_id(to) or not self._in_tree(num, head, to)):
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
        rows = self._all(_HISTORY_PAGE, (*runs_arrays(runs[::-1]), limit + 1, limit + 1)) if runs else []
        items = [entry_from_row(row, text=self._object_text(row[5]) if row[5] else None) for row in rows]
        more = len(items) > limit
        items = items[:limit]
        return Page(items=items, next_cursor=encode_cursor(items[-1].id) if more else None)

    def tree(self, session_id: str) -> TreeView:
        num, head = self._num_and_head(session_id)
        intervals = self._tree_intervals(num, head)
        label = int(EntryKind.LABEL)
        rows: dict[int, TreeRow] = {}
        for entry_id, parent, kind, text, data, obj in self._all(
            f"SELECT DISTINCT e.id, e.parent, e.kind, substr(e.text, 1, 200), CASE e.kind WHEN {label} THEN e.data END,"
            f" e.obj FROM {_RUNS}",
            runs_arrays(intervals),
        ):
            preview = text if obj is None else self._object_text(obj)[:200]
            rows[entry_id] = (entry_id, parent, kind, preview, data)
        path: set[int] = set()
        for run_lo, run_hi in self._path_runs(head):
            path.update(range(run_lo, run_hi + 1))
        return build_tree(sorted(rows.values()), head, path)

    def context(self, session_id: str) -> ModelContext:
        _num, head = self._num_and_head(session_id)
        runs = self._path_runs(head)
        compactions: dict[int, tuple[str | None, str, str | None]] = {}
        bodies: dict[int, str] = {}  # entries whose body is an object: id -> the object
        if runs:
            arrays = runs_arrays(runs)
            compactions = {row[0]: (row[1], row[2], row[3]) for row in self._all(_CONTEXT_COMPACTIONS, arrays)}
            bodies = dict(self._all(_CONTEXT_BODIES, arrays))
        applied = newest_on_path(runs, compactions)
        summary = None
        if applied is not None:
            text, data, obj = compactions[applied]
            summary = text if obj is None else self._object_text(obj)
            runs = runs_from(runs, compaction_cut(data))
        items, after_compaction = self._context_items(runs, applied)
        if bodies:
            items = [(i[0], i[1], self._object_text(bodies[i[0]]), i[3]) if i[0] in bodies else i for i in items]
        return assemble_context(
            items,
            summary=summary,
            compaction=applied,
            head=head,
            after_compaction=after_compaction,
            response_data=self._entry_data,
        )

    def _context_items(self, runs: list[tuple[int, int]], applied: int | None) -> tuple[list[ContextItem], int]:
        """The context's items on ``runs`` in path order, and the index of the first one after the applied
        compaction. When the runs go up in ids the rows, nearly in id order already, are the items."""
        if not runs:
            return [], 0
        if _ascending(runs):
            items = self._streamed(f"SELECT {_CONTEXT_COLUMNS} FROM {_RUNS}{_CONTEXT_WHERE}", runs_arrays(runs))
            items.sort()  # by id: linear on rows in order (tuples of unique ints compare by their first item)
            after = 0 if applied is None else bisect.bisect_right(items, applied, key=operator.itemgetter(0))
            return items, after
        # Any other order (none the store writes): sorted by the run's place, then the id.
        rows = self._path_rows(_CONTEXT_COLUMNS, runs, _CONTEXT_WHERE)
        applied_run = next((i for i, (lo, hi) in enumerate(runs) if applied is not None and lo <= applied <= hi), None)
        after_compaction = 0
        if applied_run is not None and applied is not None:
            after_compaction = sum(1 for row in rows if (row[-1] - 1, row[0]) <= (applied_run, applied))
        return [(row[0], row[1], row[2], row[3]) for row in rows], after_compaction

    def _streamed(self, sql: str, params: tuple[Any, ...]) -> list[ContextItem]:
        """The rows of a large read, in binary (no integer is parsed from text) and in rounds of
        :data:`CONTEXT_CHUNK` rows, so the client decodes while the server goes on reading and sending,
        and no result of the whole read is held twice (libpq's and Python's)."""
        with self.conn.cursor(binary=True) as cursor:
            if not _CHUNKS:
                return cast(list[ContextItem], cursor.execute(sql, params).fetchall())
            rows = list(cursor.stream(sql, params, size=CONTEXT_CHUNK))
        # libpq (17, 18) keeps a query's chunked mode until the next query sent outside a pipeline: the first
        # statement of a pipeline opened next would come back in chunks, which psycopg refuses ("unexpected
        # result status from query: TUPLES_CHUNK"). One plain statement (a round trip) leaves it as it was.
        self.conn.execute(_RESET)
        return cast(list[ContextItem], rows)

    def _entry_data(self, entry_id: int) -> str | None:
        found = self._one("SELECT data FROM entries WHERE id = %s", (entry_id,))
        return None if found is None else found[0]
