"""Context building is pure: it works on the path's runs and rows, without a database."""

from __future__ import annotations

from anyy.domain.context import assemble, newest_on_path, runs_from
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


def test_assemble_leaves_out_compactions_and_decodes_tool_payloads_only() -> None:
    rows = [
        (1, EntryKind.USER, "hello", None, None),
        (2, EntryKind.COMPACTION, "old summary", None, None),
        (3, EntryKind.TOOL_CALL, "", '{"call_id":"c1","name":"ls"}', None),
        (4, EntryKind.TOOL_RESULT, "a b c", '{"call_id":"c1"}', None),
    ]
    ctx = assemble(rows, compaction=None, summary=None, head=4, last_usage=None, last_usage_entry=None)
    assert [item[0] for item in ctx.items] == [1, 3, 4]
    assert ctx.items[0][3] is None
    assert ctx.items[1][3] == {"call_id": "c1", "name": "ls"}


def test_token_estimate_is_last_usage_plus_a_quarter_of_newer_characters() -> None:
    rows = [
        (1, EntryKind.USER, "x" * 400, None, None),
        (2, EntryKind.ASSISTANT, "y" * 40, None, None),
        (3, EntryKind.USER, "z" * 80, None, None),
    ]
    usage = Usage(input=1000, output=50, cache_read=200)
    ctx = assemble(rows, compaction=None, summary=None, head=3, last_usage=usage, last_usage_entry=2)
    assert ctx.tokens == 1000 + 200 + 50 + 80 // 4
    without = assemble(rows, compaction=None, summary="s" * 40, head=3, last_usage=None, last_usage_entry=None)
    assert without.tokens == (400 + 40 + 80 + 40) // 4
