"""Context building is pure: it works on the path's runs and rows, without a database."""

from __future__ import annotations

from anyy.domain.context import (
    ContextItem,
    estimate_tokens,
    last_response_index,
    newest_on_path,
    runs_from,
    tool_payload,
)
from anyy.domain.entries import EntryKind, Usage


def test_newest_compaction_is_the_one_nearest_the_head_not_the_highest_id() -> None:
    # A fork: the path's first run belongs to a later session (higher ids) than its second.
    runs = [(5000, 5010), (100, 120)]
    assert newest_on_path(runs, [5005, 110]) == 110
    assert newest_on_path(runs, [5005, 5009]) == 5009
    assert newest_on_path(runs, []) is None


def test_runs_from_cuts_the_path_at_the_first_kept_entry() -> None:
    runs = [(1, 10), (50, 60), (200, 230)]
    assert runs_from(runs, 55) == [(55, 60), (200, 230)]
    assert runs_from(runs, 1) == runs
    assert runs_from(runs, 999) == runs  # off the path: keep everything rather than lose context


def test_token_estimate_is_last_usage_plus_a_quarter_of_newer_characters() -> None:
    items: list[ContextItem] = [
        (1, EntryKind.USER, "x" * 400, None),
        (2, EntryKind.ASSISTANT, "y" * 40, None),
        (3, EntryKind.TOOL_CALL, "", '{"call_id":"c1","name":"ls"}'),
        (4, EntryKind.USER, "z" * 80, None),
    ]
    index = last_response_index(items)
    assert index == 1
    usage = Usage(input=1000, output=50, cache_read=200)
    assert estimate_tokens(items, None, usage, index) == 1000 + 200 + 50 + 80 // 4
    assert estimate_tokens(items, "s" * 40, None, None) == (400 + 40 + 80 + 40) // 4
    assert last_response_index(items[:1]) is None


def test_tool_payloads_are_decoded_on_demand() -> None:
    assert tool_payload((3, EntryKind.TOOL_CALL, "", '{"call_id":"c1","name":"ls"}')) == {"call_id": "c1", "name": "ls"}
    assert tool_payload((1, EntryKind.USER, "hi", None)) == {}
