"""Pure rules: entry payloads, ids, queue states, cursors, search queries, the tree view."""

from __future__ import annotations

import msgspec
import pytest

from anyy.domain import entry_ids
from anyy.domain.entries import EntryKind, LabelData, ToolCallData, encode_data
from anyy.domain.errors import Conflict, InvalidInput
from anyy.domain.paging import decode_cursor, encode_cursor
from anyy.domain.queue import NewSubmission, Submission, check_editable, check_new_submission, outcome_for
from anyy.domain.search import fts_query
from anyy.domain.tree import TreeRow, build_tree


def test_a2_payloads_are_checked_against_their_kind() -> None:
    assert encode_data(EntryKind.USER, None) is None
    raw = encode_data(EntryKind.TOOL_CALL, ToolCallData(call_id="c", name="read", arguments={"path": "x"}))
    assert raw is not None
    assert msgspec.json.decode(raw)["name"] == "read"
    with pytest.raises(InvalidInput, match="needs data"):
        encode_data(EntryKind.TOOL_CALL, None)
    with pytest.raises(InvalidInput, match="invalid data"):
        encode_data(EntryKind.LABEL, {"target": "not a number"})
    with pytest.raises(InvalidInput, match="takes LabelData"):
        encode_data(EntryKind.LABEL, ToolCallData(call_id="c", name="x"))
    assert EntryKind.parse("tool_result") is EntryKind.TOOL_RESULT
    with pytest.raises(InvalidInput, match="unknown entry kind"):
        EntryKind.parse("telepathy")


def test_entry_ids_stay_exact_in_json_numbers() -> None:
    top = entry_ids.make_entry_id(entry_ids.MAX_SESSION_NUMBER, entry_ids.MAX_SEQ)
    assert top < 2**53
    assert entry_ids.owner_number(top) == entry_ids.MAX_SESSION_NUMBER
    lo, hi = entry_ids.session_range(7)
    assert entry_ids.owner_number(lo) == entry_ids.owner_number(hi) == 7


def _sub(state: str, version: int = 1) -> Submission:
    return Submission(
        id="sub_x",
        session_id="ses_x",
        kind="follow_up",
        text="t",
        attachments=[],
        state=state,  # type: ignore[arg-type]
        position=1,
        version=version,
        execution_id=None,
        entry_id=None,
        error=None,
        created_at=0,
        updated_at=0,
    )


def test_q3_only_pending_items_at_the_seen_version_are_editable() -> None:
    check_editable(_sub("pending"), 1)
    check_editable(_sub("pending"), None)
    for state in ("taken", "suspended", "completed", "cancelled", "cleared"):
        with pytest.raises(Conflict, match="no longer pending"):
            check_editable(_sub(state), None)
    with pytest.raises(Conflict, match="changed since you read it"):
        check_editable(_sub("pending", version=3), 2)


def test_c5_outcomes_follow_the_execution() -> None:
    assert outcome_for("failed") == "failed"
    assert outcome_for("suspended") == "suspended"
    assert outcome_for("running") == "taken"
    with pytest.raises(InvalidInput):
        check_new_submission(NewSubmission(text="   "))


def test_cursors_round_trip_and_reject_garbage() -> None:
    assert decode_cursor(encode_cursor(12.5, 7), float, int) == [12.5, 7]
    for bad in ("!!!", encode_cursor(1), "eyJ", encode_cursor([1], 2), encode_cursor(1.5, True)):
        with pytest.raises(InvalidInput, match="invalid page cursor"):
            decode_cursor(bad, float, int)


def test_search_queries_never_pass_syntax_through() -> None:
    assert fts_query("hello world") == '"hello" "world"'
    assert fts_query('"exact phrase" other') == '"exact phrase" "other"'
    assert fts_query("pref*") == '"pref"*'
    assert fts_query('a AND (b OR "c') == '"a" "AND" "b" "OR" "c"'
    with pytest.raises(InvalidInput):
        fts_query(" ()*: ")


def test_t1_tree_indents_only_at_branches_and_marks_the_path() -> None:
    label = msgspec.json.encode(LabelData(target=2)).decode()
    rows: list[TreeRow] = [
        (1, None, EntryKind.USER, "root", None),
        (2, 1, EntryKind.ASSISTANT, "answer", None),
        (3, 2, EntryKind.USER, "branch a", None),
        (4, 2, EntryKind.USER, "branch b", None),
        (5, 4, EntryKind.LABEL, "checkpoint", label),
    ]
    view = build_tree(rows, head=5, path={1, 2, 4, 5})
    assert [(n.id, n.depth) for n in view.nodes] == [(1, 0), (2, 0), (3, 1), (4, 1), (5, 1)]
    assert view.labels == {2: "checkpoint"}
    assert [n.id for n in view.nodes if n.on_path] == [1, 2, 4, 5]
    assert [n.id for n in view.nodes if n.is_head] == [5]
